#!/usr/bin/env bash
# Builds, on the development machine, what scripts/gpu/check-30.sh runs on the GPU machine
# (issue 30, the GPU part: idle nvdec cameras sharing decoders), all in .build/gpu30:
#   vinfer.zst        static vinfer (minimal FFmpeg built in; CUDA and ONNX Runtime loaded at run time)
#   cam1080p30.mp4    one looping camera: 54 s of a still, empty room then 6 s of a person walking
#                     in (the bundled sample from 4 s, as BenchmarkActivityCPU), 1920x1080 30 fps
#                     H.264 High, 1 s GOPs, no B-frames (as IP cameras send)
#   yolox_nano_416.onnx  the bundled model
# Carry .build/gpu30 (~14 MB: vinfer.zst 8.7, model 3.7, clip 1.6). Needs ffmpeg and zstd here.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=.build/gpu30
mkdir -p "$out"
scripts/build-ffmpeg-static.sh
if [ ! -f "$out/cam1080p30.mp4" ]; then
  ffmpeg -y -v error -nostdin -ss 4 -t 6 -i assets/videos/one-by-one-person-detection.mp4 -an \
    -vf "scale=1920:1080:flags=bicubic,fps=30,tpad=start_duration=54:start_mode=clone" \
    -c:v libx264 -profile:v high -preset veryfast -crf 34 -g 30 -keyint_min 30 -sc_threshold 0 -bf 0 \
    -pix_fmt yuv420p -movflags +faststart "$out/cam1080p30.mp4"
fi
cp assets/models/yolox_nano_416.onnx "$out/"
tmp=$(mktemp -d .build/gpu30-tmp.XXXXXX) # beside it: the mv below is a rename
trap 'rm -rf "$tmp"' EXIT
PKG_CONFIG=$root/scripts/pkg-config-static go build -tags vinfer_static -ldflags='-s -w' -o "$tmp/vinfer" ./cmd/vinfer
zstd -q -19 -T0 -f "$tmp/vinfer" -o "$tmp/vinfer.zst"
mv -f "$tmp/vinfer.zst" "$out/vinfer.zst" # whole: .build/gpu30 may be carried meanwhile
git rev-parse --short HEAD >"$out/commit"
du -sh "$out"/*
du -sh "$out"
