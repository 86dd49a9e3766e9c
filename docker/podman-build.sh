#!/usr/bin/env bash
# Builds the image from the Dockerfile with a daemonless builder (podman build, as root), on a
# machine that reaches Debian's packages, the Go module proxy and the npm registry but no image
# registry: the Dockerfile's two base images are made here first, under the names it asks for,
# and the build never pulls (--pull=never).
#
#   docker.io/library/debian:bookworm-slim   debootstrap --variant=minbase bookworm, imported
#   docker.io/library/golang:1.26-bookworm   that + gcc, make, pkg-config, curl, git, and this
#                                            machine's Go (/usr/local/go, which must be 1.26.x)
#
# Usage: docker/podman-build.sh [TAG]   (default TAG vinfer:dev; needs root, debootstrap, podman)
# The bases are made once (podman image exists); BASES=1 remakes them. The build runs with the
# host's network (apt-get source, go mod download, the ONNX Runtime package); --format docker
# keeps the Dockerfile's HEALTHCHECK (OCI images have none). e2e/image's TestPodmanImage runs
# the image this makes.
set -euo pipefail
tag=${1:-vinfer:dev}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
log() { printf '[podman-build] %s\n' "$*" >&2; }
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Machines with cgroups in hybrid mode (v1 controllers, an empty v2 hierarchy at
# /sys/fs/cgroup/unified) need runc (crun refuses them) and podman's cgroupfs manager (no
# systemd); a sandbox without CAP_SYS_RESOURCE cannot raise rlimits to podman's defaults as root
# (nofile 1048576, nproc 4194304), so RUN steps get bounded ones. PODMAN_OPTS and BUILD_OPTS
# override both choices.
if [ -z "${PODMAN_OPTS+x}" ]; then
  PODMAN_OPTS=""
  [ -d /sys/fs/cgroup/unified ] && PODMAN_OPTS="--runtime runc --cgroup-manager cgroupfs"
fi
BUILD_OPTS=${BUILD_OPTS---ulimit nofile=16384:16384 --ulimit nproc=16384:16384}
podman() { command podman $PODMAN_OPTS "$@"; }
slim=docker.io/library/debian:bookworm-slim
golang=docker.io/library/golang:1.26-bookworm

if [ "${BASES:-0}" = 1 ] || ! podman image exists "$slim"; then
  dir=$(mktemp -d /var/tmp/vinfer-slim.XXXXXX)
  trap 'rm -rf "$dir"' EXIT
  cache=${VINFER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vinfer}
  mkdir -p "$cache/debootstrap"
  log "debootstrap --variant=minbase bookworm → $slim"
  debootstrap --variant=minbase --cache-dir="$cache/debootstrap" bookworm "$dir/fs" "$mirror" \
    >"$dir/log" 2>&1 || { tail -20 "$dir/log" >&2; exit 1; }
  rm -rf "$dir"/fs/var/cache/apt/archives/*.deb "$dir"/fs/var/lib/apt/lists/*
  tar -C "$dir/fs" --numeric-owner -c . | podman import \
    --change 'CMD ["bash"]' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' - "$slim" >/dev/null
fi
if [ "${BASES:-0}" = 1 ] || ! podman image exists "$golang"; then
  case "$(/usr/local/go/bin/go env GOVERSION)" in
    go1.26*) ;;
    *) log "/usr/local/go is $(/usr/local/go/bin/go env GOVERSION), the Dockerfile wants 1.26"; exit 1 ;;
  esac
  log "$golang from $slim and /usr/local/go ($(/usr/local/go/bin/go env GOVERSION))"
  # The local CAs of this machine (/usr/local/share/ca-certificates: a TLS-inspecting egress
  # proxy's) go into the build base, so that go mod download and the ONNX Runtime fetch work
  # here; the runtime image gets none of them.
  mkdir -p /usr/local/share/ca-certificates
  podman build $BUILD_OPTS --pull=never --network=host -v /usr/local/go:/host-go:ro \
    -v /usr/local/share/ca-certificates:/host-ca:ro -t "$golang" -f - "$root/docker" <<'EOF'
FROM docker.io/library/debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates curl git gcc libc6-dev make pkg-config xz-utils >/dev/null && \
    rm -rf /var/lib/apt/lists/* && cp -a /host-go /usr/local/go && \
    (cp /host-ca/*.crt /usr/local/share/ca-certificates/ 2>/dev/null || true) && update-ca-certificates >/dev/null
ENV GOPATH=/go PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
EOF
fi
log "podman build -t $tag $root"
podman build $BUILD_OPTS --format docker --pull=never --network=host --build-arg VERSION="${VERSION:-dev}" -t "$tag" "$root"
podman image inspect --format '{{.Id}} {{.Size}} bytes' "$tag" >&2
