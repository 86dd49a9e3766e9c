#!/usr/bin/env bash
# Builds, on the development machine, what scripts/gpu/check-probe30.sh runs on the GPU machine
# (issue 30: the cost of an idle key-frame probe on shared NVDEC decoders; no ONNX Runtime), all
# in .build/gpuprobe30:
#   decpool.test.zst    static decpool test binary (minimal FFmpeg built in; CUDA loaded at run time)
#   clip1080p30.mp4     1920x1080 30 fps H.264 High, B-frames (SPS max_num_reorder_frames 2: a
#                       lone key frame is held back for reordering), GOP 60 (scripts/gpu/testdata.sh)
#   clip1080p30-nob.mp4 the same pictures without B-frames (a key frame comes out at once), as
#                       the cameras of check-30
#   zstd                this machine's zstd (the GPU machine has none; as ../shared/gpu/prepare.sh's)
#   commit
# Carry .build/gpuprobe30 (~6 MB) alone: nothing else (no ONNX Runtime, no .gpu/). Needs ffmpeg (testdata.sh, once) and zstd here.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=.build/gpuprobe30
mkdir -p "$out"
scripts/build-ffmpeg-static.sh
[ -f .build/gpu-testdata/clip1080p30-nob.mp4 ] || scripts/gpu/testdata.sh
cp .build/gpu-testdata/clip1080p30.mp4 .build/gpu-testdata/clip1080p30-nob.mp4 "$out/"
cp "$(command -v zstd)" "$out/zstd"
tmp=$(mktemp -d .build/gpuprobe30-tmp.XXXXXX) # beside it: the mv below is a rename
trap 'rm -rf "$tmp"' EXIT
PKG_CONFIG=$root/scripts/pkg-config-static go test -c -tags vinfer_static -ldflags='-s -w' -o "$tmp/decpool.test" ./decpool
zstd -q -19 -T0 -f "$tmp/decpool.test" -o "$tmp/decpool.test.zst"
mv -f "$tmp/decpool.test.zst" "$out/decpool.test.zst"
git rev-parse --short HEAD >"$out/commit"
du -sh "$out"/*
du -sh "$out"
