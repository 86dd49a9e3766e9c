#!/usr/bin/env bash
# Puts vinfer's default models, labels, sample videos, test images and tracking data into assets/.
# 1. From a local copy (VINFER_ASSETS_SRC, default ../shared/assets) when it exists: copied and
#    checked against scripts/assets.sha256.
# 2. Otherwise downloaded from the public sources listed in scripts/assets.sources (pinned commits),
#    each checked against its sha256; the derived clips and frames are regenerated with ffmpeg
#    (their bytes may differ from the shipped ones across ffmpeg/x265 versions, so only sources
#    are hash-checked). Licenses: assets/licenses/ and NOTICE.md.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
src=${VINFER_ASSETS_SRC:-$root/../shared/assets}
dst=$root/assets
log() { printf '[assets] %s\n' "$*" >&2; }

check() { # file sha256
  local got; got=$(sha256sum "$1" | awk '{print $1}')
  [ "$got" = "$2" ] || { log "sha256 mismatch for $1: got $got, want $2"; return 1; }
}

mkdir -p "$dst"/{models,labels,videos,images,licenses}
if [ -d "$src/models" ]; then
  while read -r sum rel; do
    [ -z "$sum" ] || [ "${sum:0:1}" = "#" ] && continue
    if [ ! -f "$dst/$rel" ] || ! check "$dst/$rel" "$sum" 2>/dev/null; then
      mkdir -p "$(dirname "$dst/$rel")"
      cp -f "$src/$rel" "$dst/$rel"
      check "$dst/$rel" "$sum"
    fi
  done < scripts/assets.sha256
  cp -n "$src"/licenses/* "$dst/licenses/" 2>/dev/null || true
  cp -n "$src"/MANIFEST.md "$dst/" 2>/dev/null || true
  exit 0
fi

log "no local assets at $src: downloading from public sources"
while read -r sum rel url; do
  [ -z "$sum" ] || [ "${sum:0:1}" = "#" ] && continue
  if [ ! -f "$dst/$rel" ] || ! check "$dst/$rel" "$sum" 2>/dev/null; then
    log "GET $url"
    mkdir -p "$(dirname "$dst/$rel")"
    if ! curl -fsSL --retry 3 -o "$dst/$rel.part" "$url"; then
      log "cannot download $url: without network access, copy the assets from a machine that has them and set VINFER_ASSETS_SRC=DIR (a folder laid out like assets/, see scripts/assets.sources)"
      exit 1
    fi
    check "$dst/$rel.part" "$sum"
    mv "$dst/$rel.part" "$dst/$rel"
  fi
done < scripts/assets.sources
v=$dst/videos; i=$dst/images
ff() { ffmpeg -nostdin -loglevel error -y "$@"; }
[ -f "$v/person-bicycle-car_hevc.mp4" ] || ff -i "$v/person-bicycle-car-detection_reenc.mp4" -map 0:v:0 -c:v libx265 -preset medium -crf 23 \
  -x265-params "bframes=4:keyint=120:min-keyint=24:log-level=error" -tag:v hvc1 -an -movflags +faststart "$v/person-bicycle-car_hevc.mp4"
[ -f "$v/car-detection_remux.ts" ] || ff -i "$v/car-detection.mp4" -map 0 -c copy -f mpegts "$v/car-detection_remux.ts"
[ -f "$i/office_person_frame60s.jpg" ] || ff -ss 60 -i "$v/one-by-one-person-detection.mp4" -frames:v 1 -q:v 2 "$i/office_person_frame60s.jpg"
[ -f "$i/office_face_frame690.jpg" ] || ff -i "$v/one-by-one-person-detection.mp4" -vf 'select=eq(n\,690)' -frames:v 1 -q:v 2 "$i/office_face_frame690.jpg"
