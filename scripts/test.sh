#!/usr/bin/env bash
# Runs vinfer's test suite on a fresh Debian 12 machine: sets up what it needs (scripts/setup.sh),
# then vet, all tests, and the runtime packages again under the race detector.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
./scripts/setup.sh
export PATH=$PATH:/usr/local/go/bin
go vet ./...
# The live-source packages stream real peers on loopback in real time: one package at a time,
# so they do not starve each other on a small CI machine.
go test -count=1 -timeout 20m $(go list ./... | grep -v -e /source -e /e2e/sources)
go test -count=1 -timeout 20m -p 1 ./source/... ./e2e/sources/
go test -count=1 -race -timeout 20m ./frame/... ./pipeline/...
# The whole-app pipeline tests that predate the scene layer, under the race detector too (the
# scene test's 700 frames would take ten minutes there; its logic is race-tested in ./pipeline).
go test -count=1 -race -timeout 20m -run 'TestFilesLoseNothing|TestSlowInference|TestIntervalAndFPSCap|TestStopDrains|TestCascade' ./e2e/pipeline/
# The Helm chart's tests: their own Go module (helm's library and the Kubernetes API types). It
# uses vinfer's config package through a replace directive, so a change of vinfer's go.mod may
# need `cd charts && go mod tidy`; -mod=mod lets CI resolve it meanwhile.
(cd charts && go vet -mod=mod ./... && go test -mod=mod -count=1 -timeout 20m ./...)
