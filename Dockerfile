# syntax=docker/dockerfile:1
# vinfer's container image (docs/deploy.md):
#
#   docker build -t vinfer .
#   docker run --rm -p 8080:8080 -e VINFER_API_TOKEN=secret \
#     -v $PWD/assets/models:/models:ro -v $PWD/my-config.yaml:/etc/vinfer/config.yaml:ro vinfer
#
# The runtime image holds the binary (FFmpeg linked statically: H.264/H.265 decoding on the CPU,
# and NVDEC through the driver libraries the NVIDIA container runtime mounts), ONNX Runtime 1.30.0
# (CPU; the CUDA execution provider is a plugin mounted at run time, docs/gpu.md), the CA
# certificates and an unprivileged user (65532). It writes nothing outside its volumes, so it runs
# with a read-only root filesystem (/tmp as a tmpfs, /data for files it writes).
#
# e2e/image builds the same root filesystem without a Docker engine (debootstrap + the scripts in
# docker/) and runs it with a read-only root: keep the steps here in those scripts.
ARG DEBIAN_RELEASE=bookworm
ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-${DEBIAN_RELEASE} AS build
ARG VERSION=dev
WORKDIR /src
# FFmpeg 5.1 from Debian's source package, minimal and static (its own layer: built once).
COPY scripts/build-ffmpeg-static.sh scripts/pkg-config-static scripts/progress.sh scripts/
RUN ./scripts/build-ffmpeg-static.sh
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN VERSION=${VERSION} ./docker/build-binary.sh /out

FROM debian:${DEBIAN_RELEASE}-slim AS runtime
COPY docker/runtime-packages docker/runtime-setup.sh /tmp/
RUN sh /tmp/runtime-setup.sh && rm /tmp/runtime-packages /tmp/runtime-setup.sh
COPY --from=build /out/ /
COPY docker/config.yaml /etc/vinfer/config.yaml
ENV VINFER_ORT_LIB=/usr/local/lib/vinfer/libonnxruntime.so.1 \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,video
USER 65532:65532
WORKDIR /data
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/vinfer", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/vinfer"]
CMD ["run", "--config", "/etc/vinfer/config.yaml"]
