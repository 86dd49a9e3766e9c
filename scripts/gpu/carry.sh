#!/usr/bin/env bash
# Packs what the device runs carry (git-ignored): .build/carry-small (zstd-compressed
# vinfer-bench, the 1080p30 clip) and .build/carry-big (the clip in MP4 for OpenCV, the
# dynamic-batch YOLOX-Nano). Run after scripts/gpu/build.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
mkdir -p .build/carry-small .build/carry-big
zstd -q -19 -f .build/bin/vinfer-bench -o .build/carry-small/vinfer-bench.zst
cp .build/gpu-testdata/clip1080p30.h264 .build/carry-small/
cp .build/gpu-testdata/clip1080p30.mp4 .build/gpu-testdata/yolox_nano_416_dyn.onnx .build/carry-big/
du -sh .build/carry-small .build/carry-big
