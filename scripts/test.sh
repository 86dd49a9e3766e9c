#!/usr/bin/env bash
# Runs vinfer's test suite on a fresh Debian 12 machine: sets up what it needs (scripts/setup.sh),
# then vet, all tests, and the runtime packages again under the race detector.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# The image test's cache is built below, beside the other tests, rather than by setup.sh first.
VINFER_IMAGE_CACHE=0 ./scripts/setup.sh
export PATH=$PATH:/usr/local/go/bin
logs=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$logs"' EXIT

# Beside the rest: the container image test, after scripts/image-cache.sh (as root, when the
# test can run). When scripts/setup.sh has built the cache already (it does when run by itself,
# as the README's first command), it finds the image's base root filesystem and the static
# FFmpeg in ~/.cache/vinfer at once; on a fresh machine it builds them here, once, beside the
# other tests and outside any test's time limit (minutes: mostly network waits and one long
# compile), its progress lines shown as they come.
# And the Helm chart's tests, their own Go module (helm's library and the Kubernetes
# API types: a long first compile). The chart module uses vinfer's config package through a
# replace directive, so a change of vinfer's go.mod may need `cd charts && go mod tidy`;
# -mod=mod lets CI resolve it meanwhile.
exec 3>&2
image_cache=0
if [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null && [ "${VINFER_IMAGE_TEST:-1}" != 0 ]; then image_cache=1; fi
(
  if [ $image_cache = 1 ] && ! ./scripts/image-cache.sh 2>&1 | tee "$logs/image-cache" >&3; then
    echo "scripts/image-cache.sh failed:"; cat "$logs/image-cache"; exit 1
  fi
  go test -count=1 -timeout 30m ./e2e/image/
) >"$logs/image" 2>&1 &
image=$!
(cd charts && go vet -mod=mod ./... && go test -mod=mod -count=1 -timeout 30m ./...) >"$logs/charts" 2>&1 &
charts=$!
# The runtime packages under the race detector, beside the rest too (CPU-bound, while most of
# the others wait on peers). Then the whole-app pipeline tests that predate the scene layer (the
# scene test's 700 frames would take ten minutes there; its logic is race-tested in ./pipeline).
(go test -count=1 -race -timeout 20m ./frame/... ./pipeline/... &&
  go test -count=1 -race -timeout 20m -run 'TestFilesLoseNothing|TestSlowInference|TestIntervalAndFPSCap|TestStopDrains|TestCascade' ./e2e/pipeline/) >"$logs/race" 2>&1 &
race=$!

# Every step runs even when one fails (one failure must not hide the others' results); the exit
# status is non-zero when any failed.
status=0
step() { "$@" || { echo "--- FAILED: ${*:1:6} …"; status=1; }; }
step go vet ./...
# Most tests wait on peers (brokers, RTP senders, browsers) more than they compute: four
# packages at a time keep both cores busy. Every test is written to pass on a loaded machine.
step go test -count=1 -timeout 20m -p 4 $(go list ./... | grep -v -e /e2e/image)

for job in race image charts; do
  pid=${!job}
  if wait "$pid"; then grep -E "^(ok|---)" "$logs/$job" || tail -n 3 "$logs/$job"; else echo "--- $job tests failed:"; cat "$logs/$job"; status=1; fi
done
exit $status
