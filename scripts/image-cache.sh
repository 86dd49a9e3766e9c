#!/usr/bin/env bash
# Builds, once per machine, what the container image test (e2e/image) would otherwise build
# inside its run: the runtime image's base root filesystem (debootstrap from Debian's packages,
# then docker/runtime-setup.sh; docker/rootfs.sh --base) and the static FFmpeg
# (scripts/build-ffmpeg-static.sh), outside the clone in ~/.cache/vinfer ($VINFER_CACHE,
# scripts/progress.sh), each under a name keyed by the hash of its inputs. A first build needs
# root and Debian's mirror and takes minutes (mostly network waits and FFmpeg's compile), with a
# progress line every 30 s while a step advances; with both in the cache it says so and exits at
# once (no root needed). scripts/setup.sh and scripts/test.sh run it.
# Usage: scripts/image-cache.sh [--check]   (--check: exit 0 when both are cached, 3 when not;
# builds nothing)
# Env: see docker/rootfs.sh and scripts/build-ffmpeg-static.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/progress.sh"
log() { printf '[image-cache] %s\n' "$*" >&2; }
base=$("$root/docker/rootfs.sh" --key)
ffmpeg=$("$root/scripts/build-ffmpeg-static.sh" --prefix)
if [ -f "$base/.vinfer-base" ] && [ -f "$ffmpeg/.complete" ]; then
  log "cached: $base, $ffmpeg"
  exit 0
fi
if [ "${1:-}" = --check ]; then
  log "not cached: $base, $ffmpeg"
  exit 3
fi
[ "$(id -u)" = 0 ] || { log "needs root to build $base (debootstrap, chroot)"; exit 1; }
log "building once for this machine into $(vinfer_cache) (a few minutes; progress every 30 s)"
start=$SECONDS
"$root/scripts/build-ffmpeg-static.sh"
"$root/docker/rootfs.sh" --base
log "ready in $((SECONDS - start)) s"
