#!/usr/bin/env bash
# Builds, on the development machine, what scripts/gpu/check-16b.sh and memory-16.sh run on the
# GPU machine (docs/benchmarks-gpu.md, "How to reproduce"):
#   .build/gpu16b/{vinfer,vinfer-bench,app.test,codec.test}.zst  static (minimal FFmpeg built in;
#                      CUDA and ONNX Runtime loaded at run time), stripped, zstd -19
#   .build/gpu-testdata/  the 1080p clips (with and without B-frames, MP4 and Annex-B), the car
#                      clip's Annex-B and NV12 for the codec tests, the dynamic-batch YOLOX-Nano
# Needs the assets (scripts/setup.sh or scripts/assets.sh), ffmpeg, zstd and python3 with onnx and numpy (PYTHON, default
# /usr/bin/python3, for the YOLOv8m-sized model of check-16b.sh);
# builds the static FFmpeg (scripts/build-ffmpeg-static.sh) once per machine.
# Prints the sizes: each carry must stay within 64 MiB.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
[ -f assets/models/yolox_nano_416.onnx ] || { echo "stage-16b: assets missing: run scripts/setup.sh first" >&2; exit 1; }
scripts/build-ffmpeg-static.sh  # once per machine (cached outside the clone)
mkdir -p .build/gpu-testdata .build/gpu16b
[ -f .build/gpu-testdata/clip1080p30-nob.mp4 ] && [ -f .build/gpu-testdata/car-detection.nv12 ] || scripts/gpu/testdata.sh
[ -f .build/gpu-testdata/yolox_nano_416_dyn.onnx ] ||
  go run ./cmd/vinfer dynamic-batch assets/models/yolox_nano_416.onnx .build/gpu-testdata/yolox_nano_416_dyn.onnx
export PKG_CONFIG=$root/scripts/pkg-config-static
flags=(-tags vinfer_static -ldflags=-s\ -w)
out=.build/gpu16b
go build "${flags[@]}" -o $out/vinfer ./cmd/vinfer
go build "${flags[@]}" -o $out/vinfer-bench ./cmd/vinfer-bench
go test -c "${flags[@]}" -o $out/app.test ./app
go test -c "${flags[@]}" -o $out/codec.test ./codec
for f in vinfer vinfer-bench app.test codec.test; do zstd -q -19 -T0 -f --rm $out/$f -o $out/$f.zst; done
du -sh $out .build/gpu-testdata
du -b $out/* .build/gpu-testdata/* | sort -n | tail -12
