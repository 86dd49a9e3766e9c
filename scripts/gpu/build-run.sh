#!/usr/bin/env bash
# Builds, on the development machine, what scripts/gpu/run-check.sh runs on the GPU machine:
# .build/gpu-run/vinfer.zst and app.test.zst (self-contained: static minimal FFmpeg; CUDA and
# ONNX Runtime are loaded at run time), next to .build/gpu-testdata (the 1080p clip and the
# YOLOX-Nano as exported and its dynamic-batch copy). Carry both folders: .build/gpu-run (~15 MB) and
# .build/gpu-testdata (~12 MB).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
scripts/build-ffmpeg-static.sh  # once per machine (cached outside the clone)
[ -f .build/gpu-testdata/clip1080p30.mp4 ] || scripts/gpu/testdata.sh
# The model as exported (batch 1: vinfer run rewrites it at load, configs/gpu.yaml) and its
# dynamic-batch copy for vinfer-bench, which opens models without vinfer's loader.
cp assets/models/yolox_nano_416.onnx .build/gpu-testdata/
[ -f .build/gpu-testdata/yolox_nano_416_dyn.onnx ] ||
  go run ./cmd/vinfer dynamic-batch assets/models/yolox_nano_416.onnx .build/gpu-testdata/yolox_nano_416_dyn.onnx
export PKG_CONFIG=$root/scripts/pkg-config-static
mkdir -p .build/gpu-run
go build -tags vinfer_static -o .build/gpu-run/vinfer ./cmd/vinfer
go test -c -tags vinfer_static -o .build/gpu-run/app.test ./app
for f in vinfer app.test; do zstd -q -19 -f --rm .build/gpu-run/$f -o .build/gpu-run/$f.zst; done
du -sh .build/gpu-run .build/gpu-testdata
