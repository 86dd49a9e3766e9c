#!/usr/bin/env bash
# Builds what the runtime image holds besides Debian's packages, into a folder laid out as the
# image's root (the Dockerfile's build stage, and e2e/image's test, run this same script):
#
#   OUT/usr/local/bin/vinfer                          self-contained: FFmpeg linked statically
#                                                     (scripts/build-ffmpeg-static.sh), CUDA and
#                                                     NVDEC loaded at run time from the NVIDIA
#                                                     container runtime's driver libraries
#   OUT/usr/local/lib/vinfer/libonnxruntime.so.1      ONNX Runtime 1.30.0 (CPU), sha256-checked
#
# Usage: docker/build-binary.sh OUT
# Env: ORT_LIB=/path/libonnxruntime.so.1 uses that file (it must match the pinned sha256) instead
# of fetching the npm package onnxruntime-node@1.30.0 from registry.npmjs.org; VERSION is what
# `vinfer version` prints (default: dev).
set -euo pipefail
out=${1:?usage: docker/build-binary.sh OUT}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
log() { printf '[build-binary] %s\n' "$*" >&2; }
ort_sha256=ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23
ort_url=https://registry.npmjs.org/onnxruntime-node/-/onnxruntime-node-1.30.0.tgz
export PATH=$PATH:/usr/local/go/bin

. "$root/scripts/progress.sh"

mkdir -p "$out/usr/local/bin" "$out/usr/local/lib/vinfer"
./scripts/build-ffmpeg-static.sh
log "building vinfer (static FFmpeg, tag vinfer_static)"
buildlog=$(mktemp "${TMPDIR:-/tmp}/vinfer-build-binary.XXXXXX")
# -v: the packages compiled, one a line, for progress_run (a first build compiles them all).
# The log stays when the build fails.
# Go's build cache keys cgo packages on PKG_CONFIG's path, not on what it answers: the answer's
# hash goes into CGO_CFLAGS so that a static FFmpeg rebuilt or moved is never linked stale.
flags=$(PKG_CONFIG_PATH= "$root/scripts/pkg-config-static" --cflags --libs libavcodec libavdevice libavfilter libavformat libswresample libswscale libavutil | sha256sum | cut -c1-16)
CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -DVINFER_FFMPEG_FLAGS=$flags" \
PKG_CONFIG=$root/scripts/pkg-config-static CGO_ENABLED=1 progress_run build-binary "$buildlog" \
  go build -v -tags vinfer_static -trimpath \
  -ldflags "-s -w -X main.version=${VERSION:-dev}" -o "$out/usr/local/bin/vinfer" ./cmd/vinfer
rm -f "$buildlog"
if ldd "$out/usr/local/bin/vinfer" 2>/dev/null | grep -E 'lib(av|sw)[a-z]*\.so'; then
  log "vinfer links the system's FFmpeg, not the static build (scripts/pkg-config-static)"; exit 1
fi

lib=$out/usr/local/lib/vinfer/libonnxruntime.so.1
if [ -n "${ORT_LIB:-}" ]; then
  cp "$ORT_LIB" "$lib"
elif [ ! -f "$lib" ] || ! echo "$ort_sha256  $lib" | sha256sum -c --status; then
  log "fetching ONNX Runtime 1.30.0 ($ort_url)"
  tmp=$(mktemp -d)
  curl -fsSL --retry 3 -o "$tmp/ort.tgz" "$ort_url"
  tar xzf "$tmp/ort.tgz" -C "$tmp" package/bin/napi-v6/linux/x64/libonnxruntime.so.1
  cp "$tmp/package/bin/napi-v6/linux/x64/libonnxruntime.so.1" "$lib"
  rm -rf "$tmp"
fi
echo "$ort_sha256  $lib" | sha256sum -c --quiet || { log "libonnxruntime.so.1: sha256 mismatch"; exit 1; }
chmod 0755 "$out/usr/local/bin/vinfer"
chmod 0644 "$lib"
log "done: $out"
