#!/usr/bin/env bash
# Builds the container image's root filesystem into a folder, without a Docker engine or an
# image registry: what the Dockerfile's runtime stage holds, made by the same steps.
#
#   FROM debian:bookworm-slim       → debootstrap --variant=minbase bookworm (Debian's packages)
#   RUN runtime-setup.sh            → the same script, in a chroot
#   COPY --from=build /out/ /       → docker/build-binary.sh into the folder
#   COPY docker/config.yaml         → the same file
#
# Usage: docker/rootfs.sh DIR     (needs root, debootstrap and flock; e2e/image's test runs it)
#        docker/rootfs.sh --base  builds the base alone when missing (scripts/image-cache.sh)
#        docker/rootfs.sh --key   prints the base's folder, builds nothing (needs neither)
# The slow parts are built once per machine, outside the clone, in $(vinfer_cache)
# (scripts/progress.sh; ~/.cache/vinfer): the debootstrap'ed and set-up base
# (rootfs-base-KEY, KEY hashing this script, docker/runtime-packages and
# docker/runtime-setup.sh, so a change of them builds anew), Debian's downloaded packages
# (debootstrap/) and the static FFmpeg (scripts/build-ffmpeg-static.sh); long steps print a
# progress line every 30 s. The binary is rebuilt every time (Go's build cache makes it quick).
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), ORT_LIB (see build-binary.sh).
set -euo pipefail
dir=${1:?usage: docker/rootfs.sh DIR|--base|--key}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$root/scripts/progress.sh"
log() { printf '[rootfs] %s\n' "$*" >&2; }
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=$(vinfer_cache)
key=$(cat "$root/docker/rootfs.sh" "$root/docker/runtime-packages" "$root/docker/runtime-setup.sh" | sha256sum | cut -c1-16)
base=$cache/rootfs-base-$key
if [ "$dir" = --key ]; then
  printf '%s\n' "$base"
  exit 0
fi

mkdir -p "$cache/debootstrap"
exec 8>"$cache/.rootfs-base.lock"
flock 8 # another clone's build of the base finishes first; then this one finds it
if [ ! -f "$base/.vinfer-base" ]; then
  rm -rf "$base" "$base.tmp"
  mkdir -p "$base.tmp"
  include=$(grep -v '^#' "$root/docker/runtime-packages" | paste -sd, -)
  log "debootstrap --variant=minbase bookworm (+ $include) → $base"
  progress_run rootfs-debootstrap "$cache/rootfs-base.log" debootstrap --variant=minbase --include="$include" \
    --cache-dir="$cache/debootstrap" bookworm "$base.tmp" "$mirror"
  cp "$root/docker/runtime-packages" "$root/docker/runtime-setup.sh" "$base.tmp/tmp/"
  chroot "$base.tmp" /bin/sh /tmp/runtime-setup.sh
  rm "$base.tmp/tmp/runtime-packages" "$base.tmp/tmp/runtime-setup.sh"
  echo "$key" >"$base.tmp/.vinfer-base"
  mv "$base.tmp" "$base"
else
  log "base: $base (cached)"
fi
exec 8>&-
[ "$dir" != --base ] || exit 0
rm -rf "$dir"
mkdir -p "$(dirname "$dir")"
cp -a "$base" "$dir"
rm "$dir/.vinfer-base"
"$root/docker/build-binary.sh" "$dir"
install -m 0644 "$root/docker/config.yaml" "$dir/etc/vinfer/config.yaml"
log "root filesystem ready: $dir"
