#!/usr/bin/env bash
# Builds, on the development machine, the self-contained GPU binaries carried to the GPU machine
# (static minimal FFmpeg; CUDA and ONNX Runtime are loaded at run time):
#   .build/bin/vinfer-bench  and the test binaries cuda.test, gpu.test, codec.test
# and the inputs of scripts/gpu/testdata.sh. Needs scripts/build-ffmpeg-static.sh once.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
scripts/build-ffmpeg-static.sh
[ -f .build/gpu-testdata/clip1080p30.h264 ] || scripts/gpu/testdata.sh
export PKG_CONFIG=$root/scripts/pkg-config-static
mkdir -p .build/bin
go build -tags vinfer_static -o .build/bin/vinfer-bench ./cmd/vinfer-bench
go test -c -tags vinfer_static -o .build/bin/cuda.test ./cuda
go test -c -tags vinfer_static -o .build/bin/gpu.test ./preprocess/gpu
go test -c -tags vinfer_static -o .build/bin/codec.test ./codec
go test -c -tags vinfer_static -o .build/bin/infer.test ./infer
ls -la .build/bin
