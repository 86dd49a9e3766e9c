#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for building, testing and running vinfer. Idempotent.
#   - Debian packages: Go toolchain deps (gcc, pkg-config), FFmpeg 5.1 dev libraries, ffmpeg CLI
#     (test peers), python3-onnx (test model generator), python3-jinja2 (Home Assistant's
#     templates rendered in tests), chromium (browser tests), npm,
#     debootstrap (e2e/image builds the container image's root filesystem from Debian's packages).
#   - ONNX Runtime 1.30.0 CPU library from npm onnxruntime-node@1.30.0 -> third_party/ort/lib/
#   - bin/vinfer, built
#   - models, labels, videos, images, tracking data -> assets/ (copied from ../shared/assets, else downloaded
#     from the public sources in scripts/assets.sources; every file checked against scripts/assets.sha256)
#   - as root: the container image test's cache (scripts/image-cache.sh: the image's base root
#     filesystem and a static FFmpeg, once per machine into ~/.cache/vinfer, minutes the first
#     time with a progress line every 30 s, then nothing to do)
# Env: VINFER_SKIP_APT=1 skips apt; VINFER_ASSETS_SRC=DIR copies assets from DIR;
# VINFER_IMAGE_CACHE=0 skips the image cache (scripts/test.sh does, and builds it beside the tests).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

log() { printf '[setup] %s\n' "$*" >&2; }

pkgs=(gcc pkg-config ca-certificates curl ffmpeg
  libavcodec-dev libavformat-dev libavutil-dev libswscale-dev libswresample-dev libavfilter-dev libavdevice-dev
  python3-onnx python3-numpy python3-jinja2 chromium debootstrap)
command -v npm >/dev/null || pkgs+=(npm)  # Node.js from elsewhere often bundles npm; Debian's conflicts with it
if [ "${VINFER_SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${pkgs[@]}"; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    log "installing Debian packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

if ! command -v go >/dev/null; then
  [ -x /usr/local/go/bin/go ] && export PATH=$PATH:/usr/local/go/bin || { log "Go 1.26 or later is required (https://go.dev/dl/)"; exit 1; }
fi

# ONNX Runtime CPU library.
ortdir=third_party/ort/lib
if [ ! -f "$ortdir/libonnxruntime.so.1" ]; then
  log "fetching ONNX Runtime 1.30.0 (npm onnxruntime-node@1.30.0)"
  tmp=$(mktemp -d)
  (cd "$tmp" && npm pack --silent onnxruntime-node@1.30.0 >/dev/null)
  tar xzf "$tmp"/onnxruntime-node-1.30.0.tgz -C "$tmp" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
  mkdir -p "$ortdir"
  cp "$tmp"/package/bin/napi-v6/linux/x64/libonnxruntime.so.1 "$ortdir"/
  rm -rf "$tmp"
fi

# Assets.
"$root"/scripts/assets.sh

# The binary.
log "building bin/vinfer"
go build -o bin/vinfer ./cmd/vinfer

# What e2e/image would otherwise build inside the test run. A failure here does not stop setup
# (bin/vinfer is ready); scripts/test.sh tries again and reports it.
if [ "$(id -u)" = 0 ] && command -v debootstrap >/dev/null && [ "${VINFER_IMAGE_CACHE:-1}" != 0 ] &&
  [ "${VINFER_IMAGE_TEST:-1}" != 0 ]; then
  "$root"/scripts/image-cache.sh || log "warning: scripts/image-cache.sh failed (above); ./scripts/test.sh tries again"
fi
log "ok: run ./bin/vinfer run"
