#!/usr/bin/env bash
# Builds, on the development machine, what scripts/gpu/check-29.sh runs on the GPU machine:
# .build/gpu29/vinfer.zst (static: minimal FFmpeg built in; CUDA and ONNX Runtime loaded at run
# time) and .build/gpu-testdata (the 1080p clip, YOLOX-Nano as exported). Carry
# .build/gpu29/vinfer.zst, .build/gpu-testdata/clip1080p30.mp4 and
# .build/gpu-testdata/yolox_nano_416.onnx (~13 MB together).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
scripts/build-ffmpeg-static.sh
[ -f .build/gpu-testdata/clip1080p30.mp4 ] || scripts/gpu/testdata.sh
cp assets/models/yolox_nano_416.onnx .build/gpu-testdata/
mkdir -p .build/gpu29
PKG_CONFIG=$root/scripts/pkg-config-static go build -tags vinfer_static -ldflags='-s -w' -o .build/gpu29/vinfer ./cmd/vinfer
zstd -q -19 -T0 -f --rm .build/gpu29/vinfer -o .build/gpu29/vinfer.zst
du -sh .build/gpu29/vinfer.zst
