#!/usr/bin/env bash
# Builds a minimal static FFmpeg 5.1 (Debian 12's source package, the version go-astiav v0.16.0
# targets) with NVDEC/CUVID decoding, for a self-contained vinfer binary on GPU machines that have
# the NVIDIA driver but no FFmpeg libraries.
#
# Output: $(vinfer_cache)/ffmpeg-static-KEY/{include,lib,lib/pkgconfig}, outside the clone
# (~/.cache/vinfer unless VINFER_CACHE or XDG_CACHE_HOME say otherwise; scripts/progress.sh),
# built once per machine: KEY hashes this script (the configure line) and $FFMPEG_SRC, so a
# change here builds anew beside the old one. `build-ffmpeg-static.sh --prefix` prints the
# folder. The libraries load the driver's libcuda.so.1 / libnvcuvid.so.1 at run time (ffnvcodec
# dlopen), so the binary depends on libc/libm/libpthread/libdl only. Build vinfer against it with:
#
#   PKG_CONFIG=$PWD/scripts/pkg-config-static go build -tags vinfer_static -o .build/bin/vinfer ./cmd/vinfer
#
# (scripts/gpu/build-run.sh and scripts/gpu/build.sh do this for vinfer, vinfer-bench and the GPU tests)
# (the vinfer_static tag makes cgo link with `pkg-config --static`, see codec/static.go).
# Needs: dpkg-dev, a deb-src entry (added here as /etc/apt/sources.list.d/vinfer-deb-src.sources
# when running as root), libffmpeg-nvenc-dev (nv-codec headers), nasm, flock. About 2-4 minutes
# on 2 idle cores, with a progress line every 30 s. Builders of one machine take turns (flock).
# Env: JOBS (default nproc), FFMPEG_SRC (an unpacked ffmpeg-5.1.x source tree to use instead of
# apt-get source), FORCE=1 rebuilds.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/progress.sh"
cache=$(vinfer_cache)
key=$({ cat "$root/scripts/build-ffmpeg-static.sh"; printf '%s' "${FFMPEG_SRC:-}"; } | sha256sum | cut -c1-16)
prefix=$cache/ffmpeg-static-$key
if [ "${1:-}" = --prefix ]; then
  printf '%s\n' "$prefix"
  exit 0
fi
work=$cache/ffmpeg-src
jobs=${JOBS:-$(nproc)}
log() { printf '[ffmpeg-static] %s\n' "$*" >&2; }

mkdir -p "$cache"
exec 9>"$cache/.ffmpeg-static.lock"
flock 9 # another clone's build of the same KEY finishes first; then this one finds it
if [ -f "$prefix/.complete" ] && [ "${FORCE:-0}" != 1 ]; then
  log "already built in $prefix (FORCE=1 rebuilds)"; exit 0
fi
rm -rf "$prefix"

sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
need=()
for p in dpkg-dev libffmpeg-nvenc-dev nasm pkg-config gcc make; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

src=${FFMPEG_SRC:-}
if [ -z "$src" ]; then
  mkdir -p "$work"
  src=$(ls -d "$work"/ffmpeg-5.1*/ 2>/dev/null | head -1 || true)
  if [ -z "$src" ]; then
    if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
      log "adding a deb-src entry for bookworm"
      printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' |
        $sudo tee /etc/apt/sources.list.d/vinfer-deb-src.sources >/dev/null
      $sudo apt-get update -qq
    fi
    log "fetching Debian's ffmpeg source package"
    # Unpacked beside, then renamed: an interrupted run leaves no half tree to be found later.
    (cd "$work" && rm -rf .unpack && apt-get source -qq --download-only ffmpeg >/dev/null &&
      dsc=$(ls ffmpeg_5.1*.dsc | head -1) && dpkg-source -x --skip-patches "$dsc" .unpack >/dev/null &&
      v=${dsc#ffmpeg_} && mv .unpack "ffmpeg-${v%%-*}")
    src=$(ls -d "$work"/ffmpeg-5.1*/ | head -1)
  fi
fi
log "source: $src"

build=$(mktemp -d "$cache/ffmpeg-build.XXXXXX")
trap 'rm -rf "$build"' EXIT
cd "$build"
log "configure, then make -j$jobs (log: $build/make.log)"
"$src"/configure --prefix="$prefix" \
  --enable-static --disable-shared --enable-pic \
  --disable-autodetect --disable-everything --disable-programs --disable-doc --disable-debug \
  --disable-network --disable-iconv --disable-zlib --disable-bzlib --disable-lzma --disable-xlib \
  --enable-pthreads --enable-x86asm \
  --enable-ffnvcodec --enable-nvdec --enable-cuvid \
  --enable-decoder=h264,hevc,h264_cuvid,hevc_cuvid \
  --enable-hwaccel=h264_nvdec,hevc_nvdec \
  --enable-parser=h264,hevc \
  --enable-demuxer=mov,mpegts,h264,hevc,matroska \
  --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,extract_extradata,null \
  --enable-protocol=file,pipe \
  --enable-swscale --enable-filter=scale,format,null,buffer,buffersink \
  --extra-cflags="-O2" >/dev/null
progress_run ffmpeg-static "$build/make.log" make -j"$jobs"
make install >/dev/null
touch "$prefix/.complete"
log "installed into $prefix"
grep -E '^Libs(.private)?:' "$prefix"/lib/pkgconfig/libavcodec.pc >&2
