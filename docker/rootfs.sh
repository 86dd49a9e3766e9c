#!/usr/bin/env bash
# Builds the container image's root filesystem into a folder, without a Docker engine or an
# image registry: what the Dockerfile's runtime stage holds, made by the same steps.
#
#   FROM debian:bookworm-slim       → debootstrap --variant=minbase bookworm (Debian's packages)
#   RUN runtime-setup.sh            → the same script, in a chroot
#   COPY --from=build /out/ /       → docker/build-binary.sh into the folder
#   COPY docker/config.yaml         → the same file
#
# Usage: docker/rootfs.sh DIR   (needs root and debootstrap; e2e/image's test runs it)
# The debootstrap'ed base is cached (DIR.base, keyed by docker/runtime-packages and
# docker/runtime-setup.sh); the binary is rebuilt every time (Go's build cache makes it quick).
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), ORT_LIB (see build-binary.sh).
set -euo pipefail
dir=${1:?usage: docker/rootfs.sh DIR}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[rootfs] %s\n' "$*" >&2; }
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
base=$dir.base
key=$(cat "$root/docker/runtime-packages" "$root/docker/runtime-setup.sh" | sha256sum | cut -c1-16)

if [ "$(cat "$base/.vinfer-base" 2>/dev/null)" != "$key" ]; then
  rm -rf "$base" "$base.tmp"
  mkdir -p "$base.tmp" "$root/.build/debootstrap-cache"
  include=$(grep -v '^#' "$root/docker/runtime-packages" | paste -sd, -)
  log "debootstrap --variant=minbase bookworm (+ $include)"
  debootstrap --variant=minbase --include="$include" --cache-dir="$root/.build/debootstrap-cache" \
    bookworm "$base.tmp" "$mirror" >"$base.log" 2>&1 || { tail -20 "$base.log" >&2; exit 1; }
  cp "$root/docker/runtime-packages" "$root/docker/runtime-setup.sh" "$base.tmp/tmp/"
  chroot "$base.tmp" /bin/sh /tmp/runtime-setup.sh
  rm "$base.tmp/tmp/runtime-packages" "$base.tmp/tmp/runtime-setup.sh"
  echo "$key" >"$base.tmp/.vinfer-base"
  mv "$base.tmp" "$base"
fi
rm -rf "$dir"
cp -a "$base" "$dir"
rm "$dir/.vinfer-base"
"$root/docker/build-binary.sh" "$dir"
install -m 0644 "$root/docker/config.yaml" "$dir/etc/vinfer/config.yaml"
log "root filesystem ready: $dir"
