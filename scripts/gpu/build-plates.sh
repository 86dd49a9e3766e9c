#!/usr/bin/env bash
# Builds, on the development machine, what scripts/gpu/check-plates.sh runs on the GPU machine
# (issue 28 item 2, cascades on nvdec streams), into .build/gpuplates (carry that one folder,
# about 11.5 MiB): vinfer.zst (static: minimal FFmpeg built in; CUDA and ONNX Runtime loaded at
# run time), models.tar.zst (the plate detector, the recognizer and its dictionary), and plate.mp4: the bundled
# plate crop 津B6H920 moving across a grey 1280x720 picture, 10 s at 30 fps, H.264 without
# B-frames (the GPU machine has no ffmpeg CLI).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
out=.build/gpuplates
mkdir -p "$out"
scripts/build-ffmpeg-static.sh
tar -cf - -C assets/models hyperlpr3_y5fu_320x_sim.onnx paddleocr_en_number_mobile_v2.0_rec.onnx \
  -C ../labels paddleocr_en_dict.txt | zstd -q -19 -T0 -f -o "$out/models.tar.zst"
[ -f "$out/plate.mp4" ] || ffmpeg -nostdin -v error -y -f lavfi -i color=c=0x606060:s=1280x720:r=30:d=10 \
  -i assets/images/plate_crop_B6H920.jpg -filter_complex \
  "[1]scale=200:-1,pad=iw+40:ih+40:20:20:color=0x303030[p];[0][p]overlay=x='100+t*90':y=300" \
  -c:v libx264 -preset veryfast -crf 18 -bf 0 -g 60 -pix_fmt yuv420p -movflags +faststart "$out/plate.mp4"
PKG_CONFIG=$root/scripts/pkg-config-static go build -tags vinfer_static -ldflags='-s -w' -o "$out/vinfer" ./cmd/vinfer
zstd -q -19 -T0 -f --rm "$out/vinfer" -o "$out/vinfer.zst"
du -sh "$out"
