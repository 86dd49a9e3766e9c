# Sourced ON THE GPU MACHINE by the scripts of scripts/gpu: library paths for ONNX Runtime's
# CUDA EP plugin (installed by ../shared/gpu/README.md's assemble.sh at /opt/vinfer-gpu) and the
# machine's CPU build of the ORT core, then unpacks the bundles made by scripts/gpu/carry.sh
# (.build/carry/*.tar.zst: static binaries and test data) into $G once.
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
PY=/opt/torch/.venv/bin/python3
G=/tmp/vinfer-gpu
mkdir -p "$G"
for t in .build/carry/*.tar.zst; do
  [ -e "$t" ] || continue
  stamp=$G/.$(basename "$t").$(stat -c %s "$t")
  [ -e "$stamp" ] || { .gpu/zstd -d -q -c "$t" | tar -C "$G" -xf - && touch "$stamp"; }
done
B=$G/bin/vinfer-bench
M=$G/gpu-testdata/yolox_nano_416_dyn.onnx
C=$G/gpu-testdata/clip1080p30.h264
export VINFER_GPU_TESTDATA=$G/gpu-testdata VINFER_TEST_CUDA_MODEL=$M
