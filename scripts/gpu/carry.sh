#!/usr/bin/env bash
# Packs what the device runs carry (git-ignored .build/carry, unpacked there by scripts/gpu/env.sh):
#   core.tar.zst   vinfer-bench, infer.test, the 1080p30 clips and the dynamic-batch YOLOX-Nano
#                  (small enough to travel with the last part of the CUDA EP)
#   extra.tar.zst  everything else in .build/bin (vinfer, other test binaries) and .build/gpu-testdata
# Run after scripts/gpu/build.sh (and the dynamic-batch model, docs/benchmarks-gpu.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root/.build"
rm -rf carry && mkdir -p carry
core="bin/vinfer-bench bin/infer.test gpu-testdata/clip1080p30.h264 gpu-testdata/clip1080p30-nob.mp4 gpu-testdata/clip1080p30.mp4 gpu-testdata/yolox_nano_416_dyn.onnx"
tar -cf - $core | zstd -q -19 -T0 -o carry/core.tar.zst
extra=$(ls -d bin/* gpu-testdata/* | grep -vxF -f <(tr ' ' '\n' <<<"$core"))
tar -cf - $extra | zstd -q -19 -T0 -o carry/extra.tar.zst
du -sh carry/*
