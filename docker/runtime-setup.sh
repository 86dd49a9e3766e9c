#!/bin/sh
# Lays out the runtime image's root filesystem around what the build stage made: the Debian
# packages of docker/runtime-packages, the unprivileged user vinfer runs as (uid/gid 65532, no
# shell, no home it can write) and the mount points. Run as root inside the image being built:
# by the Dockerfile's runtime stage, and by e2e/image's test in a debootstrap'ed folder (chroot),
# so both images are laid out by the same steps.
set -eu
pkgs=$(grep -v '^#' /tmp/runtime-packages | tr '\n' ' ')
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb
getent group vinfer >/dev/null || groupadd --system --gid 65532 vinfer
getent passwd vinfer >/dev/null || useradd --system --uid 65532 --gid 65532 --no-create-home \
  --home-dir /nonexistent --shell /usr/sbin/nologin vinfer
# Mount points: the configuration (read-only), models (read-only), data (evidence, outboxes,
# JSON Lines files; a volume), /tmp (a tmpfs with a read-only root filesystem).
mkdir -p /etc/vinfer /models /data
chown 65532:65532 /data
chmod 1777 /tmp
