#!/usr/bin/env bash
# Makes the inputs the GPU tests and benchmarks read on the GPU machine, which has no ffmpeg CLI,
# into .build/gpu-testdata (git-ignored; carried to the device run):
#   car-detection.h264  Annex-B H.264 of assets/videos/car-detection.mp4 (377 frames, 768x432)
#   car-detection.nv12  its first 10 pictures from FFmpeg's software decoder, packed NV12
#   clip1080p30.h264    a 1920x1080 30 fps H.264 High clip (10 s, 300 frames, B-frames, GOP 60)
#                       scaled from assets/videos/person-bicycle-car-detection_reenc.mp4
#   clip1080p30.mp4     the same stream in MP4, for the Python (OpenCV) baseline
#   clip1080p30-nob.h264  the same pictures without B-frames (as IP cameras send: no reordering delay)
#   clip1080p30-nob.mp4   the same stream in MP4 (timestamps: what `realtime: true` paces by)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=$root/.build/gpu-testdata
mkdir -p "$out"
v=$root/assets/videos
ffmpeg -y -v error -i "$v/car-detection.mp4" -map 0:v -c copy -bsf:v h264_mp4toannexb -f h264 "$out/car-detection.h264"
ffmpeg -y -v error -i "$v/car-detection.mp4" -frames:v 10 -pix_fmt nv12 -f rawvideo "$out/car-detection.nv12"
if [ ! -f "$out/clip1080p30.mp4" ]; then
  ffmpeg -y -v error -i "$v/person-bicycle-car-detection_reenc.mp4" -t 10 -an \
    -vf "scale=1920:1080:flags=bicubic,fps=30" -c:v libx264 -profile:v high -preset veryfast -crf 26 \
    -g 60 -bf 2 -pix_fmt yuv420p -movflags +faststart "$out/clip1080p30.mp4"
fi
ffmpeg -y -v error -i "$out/clip1080p30.mp4" -c copy -bsf:v h264_mp4toannexb -f h264 "$out/clip1080p30.h264"
[ -f "$out/clip1080p30-nob.h264" ] || ffmpeg -y -v error -i "$out/clip1080p30.mp4" -an -c:v libx264 -profile:v high \
  -preset veryfast -crf 26 -g 60 -bf 0 -pix_fmt yuv420p -f h264 "$out/clip1080p30-nob.h264"
[ -f "$out/clip1080p30-nob.mp4" ] || ffmpeg -y -v error -r 30 -i "$out/clip1080p30-nob.h264" -c copy -movflags +faststart "$out/clip1080p30-nob.mp4"
ls -la "$out"
