#!/usr/bin/env bash
# Builds, on the development machine, what scripts/gpu/check-28.sh runs on the GPU machine:
# .build/gpu28/vinfer.zst (static: minimal FFmpeg built in; CUDA and ONNX Runtime
# loaded at run time) and .build/gpu-testdata (the 1080p clip for the end-to-end figures,
# car-detection.mp4 for the detections, YOLOX-Nano as exported). Carry .build/gpu28,
# .build/gpu-testdata/clip1080p30.mp4, .build/gpu-testdata/car-detection.mp4 and
# .build/gpu-testdata/yolox_nano_416.onnx. The YOLOv8m-sized model is made on the GPU machine
# (make-yolov8m.py).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
scripts/build-ffmpeg-static.sh
[ -f .build/gpu-testdata/clip1080p30.mp4 ] || scripts/gpu/testdata.sh
cp assets/models/yolox_nano_416.onnx assets/videos/car-detection.mp4 .build/gpu-testdata/
mkdir -p .build/gpu28
PKG_CONFIG=$root/scripts/pkg-config-static go build -tags vinfer_static -ldflags='-s -w' -o .build/gpu28/vinfer ./cmd/vinfer
zstd -q -19 -T0 -f --rm .build/gpu28/vinfer -o .build/gpu28/vinfer.zst
du -sh .build/gpu28/vinfer.zst .build/gpu-testdata/{clip1080p30,car-detection}.mp4 .build/gpu-testdata/yolox_nano_416.onnx
