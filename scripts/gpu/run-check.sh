#!/usr/bin/env bash
# Runs ON THE GPU MACHINE from the repository root, once ONNX Runtime's CUDA EP is installed at
# /opt/vinfer-gpu (../shared/gpu/README.md): the GPU path of `vinfer run` itself.
#   1. the app's GPU tests: NVDEC + fused preprocessing + ORT CUDA vs the CPU path on the same
#      frames (detections), copy/allocation counters, hot reload and restreaming on the GPU;
#   2. no GPU visible (CUDA_VISIBLE_DEVICES=""): vinfer run fails with "no CUDA device";
#   3. vinfer run --config configs/gpu.yaml --http none for RUN_SECONDS (default 20) on its 12
#      nvdec streams, stopped with SIGINT: the summary with the GPU counters, and nvidia-smi.
# Carried: .build/gpu-run (vinfer.zst, app.test.zst from scripts/gpu/build-run.sh; unpacked
# with zstd, or .gpu/zstd) and .build/gpu-testdata. Writes $OUT/run-check.log.
# --cpu runs the same steps on the CPU path (decoder: cpu, provider: cpu; step 2 expects the
# error of a machine without a driver), to try the script where there is no GPU.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/run-check.log") 2>&1
root=$PWD
cpu=0
[ "${1:-}" = --cpu ] && cpu=1
secs=${RUN_SECONDS:-20}
if [ $cpu = 0 ]; then
  NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
  export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
  nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used --format=csv
fi
export VINFER_GPU_TESTDATA=$root/.build/gpu-testdata
bin=/tmp/vinfer-run
mkdir -p $bin
z=zstd
[ -x .gpu/zstd ] && z=$root/.gpu/zstd
for f in vinfer app.test; do
  if [ -f .build/gpu-run/$f.zst ]; then "$z" -d -q -f .build/gpu-run/$f.zst -o $bin/$f || exit 1
  else cp .build/gpu-run/$f $bin/$f || exit 1; fi
  chmod +x $bin/$f
done

echo "== 1. GPU tests (app)"
(cd app && timeout -s KILL 300 $bin/app.test -test.v -test.count=1 -test.timeout 280s -test.run 'GPU|NVDEC' 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)')

echo "== 2. no GPU visible"
CUDA_VISIBLE_DEVICES= timeout -s KILL 60 $bin/vinfer run --config configs/gpu.yaml --http none --jsonl none 2>&1 | head -3
echo "exit status ${PIPESTATUS[0]} (want 1)"

cfg=configs/gpu.yaml
if [ $cpu = 1 ]; then
  cfg=/tmp/vinfer-run/gpu-cpu.yaml
  sed -e 's/decoder: nvdec/decoder: cpu/' -e 's/provider: cuda .*/provider: cpu/' -e '/provider_options:/,+1d' \
    -e "s#\.\./\.build/#$root/.build/#g" configs/gpu.yaml >$cfg
fi
echo "== 3. vinfer run --config $cfg for ${secs}s"
if [ $cpu = 0 ]; then
  nvidia-smi --query-gpu=timestamp,utilization.gpu,utilization.decoder,memory.used --format=csv -l 5 >$bin/smi.csv &
  smi=$!
fi
source scripts/gpu/stop.sh
stop_after "$secs" 60 $bin/vinfer run --config "$cfg" --http none --jsonl $bin/run.jsonl --log-level info
run_rc=$?
[ $cpu = 0 ] && { kill $smi; cat $bin/smi.csv; }
echo "detection lines: $(wc -l <$bin/run.jsonl)"
head -c 600 $bin/run.jsonl
echo
exit $run_rc # not 0: vinfer crashed or failed to stop (stop_after said how)
