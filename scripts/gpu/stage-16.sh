#!/usr/bin/env bash
# Stages, on the development machine, what scripts/gpu/check-16.sh runs on the GPU machine, in
# one folder DEST (default .build/stage-16) that the device runs carry and run from:
#   bin/new/{vinfer,app.test,vinfer-bench}.zst  this tree's static binaries (stripped)
#   bin/base/{vinfer,app.test}.zst              those of commit BASE (optional second argument)
#   .build/gpu-testdata/                        the 1080p clips and the dynamic-batch YOLOX-Nano
#   .gpu/                                       the CUDA EP parts, zstd, assemble.sh (copied from
#                                               this tree's .gpu/, ../shared/gpu/prepare.sh)
#   go.mod, app/, scripts/gpu/check-16.sh       what the test binaries and the script expect
# Then, on the device, three runs in a row carrying DEST/.gpu/ortcuda.zst.part0N (the last one
# also DEST/bin, DEST/.build, DEST/go.mod, DEST/app, DEST/scripts, DEST/.gpu/{zstd,assemble.sh,
# ortcuda.sha256}), each `cd DEST && bash .gpu/assemble.sh`, the third then
# `bash scripts/gpu/check-16.sh` (docs/benchmarks-gpu.md). Needs scripts/build-ffmpeg-static.sh,
# scripts/gpu/testdata.sh and the dynamic-batch model first (scripts/gpu/build-run.sh makes them).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
dest=$(realpath -m "${1:-.build/stage-16}")
base=${2:-}
export PKG_CONFIG=$root/scripts/pkg-config-static
flags=(-tags vinfer_static -ldflags=-s\ -w)
mkdir -p "$dest"/bin/new "$dest"/.build/gpu-testdata "$dest"/.gpu "$dest"/scripts/gpu "$dest"/app
build() { # SRC OUTDIR [bench]
  (cd "$1" && go build "${flags[@]}" -o "$2"/vinfer ./cmd/vinfer && go test -c "${flags[@]}" -o "$2"/app.test ./app &&
    if [ "${3:-}" = bench ]; then go build "${flags[@]}" -o "$2"/vinfer-bench ./cmd/vinfer-bench; fi)
  for f in "$2"/*; do [[ $f == *.zst ]] || zstd -q -19 -T0 -f --rm "$f" -o "$f.zst"; done
}
build "$root" "$dest"/bin/new bench
if [ -n "$base" ]; then
  src=$(mktemp -d)
  git archive "$base" | tar -x -C "$src"
  mkdir -p "$src"/.build "$dest"/bin/base
  ln -s "$root"/.build/ffmpeg-static "$src"/.build/ffmpeg-static
  PKG_CONFIG=$src/scripts/pkg-config-static build "$src" "$dest"/bin/base
  rm -rf "$src"
fi
for f in clip1080p30.mp4 clip1080p30.h264 yolox_nano_416_dyn.onnx; do cp .build/gpu-testdata/$f "$dest"/.build/gpu-testdata/; done
cp .gpu/ortcuda.zst.part0* .gpu/zstd .gpu/assemble.sh .gpu/ortcuda.sha256 "$dest"/.gpu/
cp go.mod "$dest"/
cp scripts/gpu/check-16.sh "$dest"/scripts/gpu/
du -sh "$dest"/bin/* "$dest"/.build "$dest"/.gpu/*
