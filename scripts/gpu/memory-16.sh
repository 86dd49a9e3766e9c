#!/usr/bin/env bash
# Issue 16's memory run, ON THE GPU MACHINE from the repository root (after scripts/gpu/check-16b.sh
# unpacked the binaries, same machine): `vinfer run` with the dynamic-batch YOLOX-Nano and no
# stream, serving its API on 127.0.0.1:18080, while scripts/gpu/memory_driver.py adds and removes
# realtime nvdec streams of the 1080p clip through that API for SECONDS (600), one change a
# second between 1 and 16 live, sampling the device memory the product reports and the process's
# RSS. Longer than one device call (10 minutes), so it runs detached:
#   memory-16.sh start [SECONDS]   starts it and follows its log for min(SECONDS+30, 570) s
#   memory-16.sh collect           waits (≤ 4 min) for its end, copies its files to $OUT
# --cpu (after start) runs it on the CPU path with the car clip (decoder cpu, provider cpu) to
# try the script where there is no GPU. Files: memory.json (the driver's result), vinfer.log,
# driver.log, nvidia-smi.csv.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
S=/tmp/vinfer-mem16
root=$PWD
cmd=${1:-}
secs=${2:-600}
cpu=0
[ "${3:-}" = --cpu ] && cpu=1
case $cmd in
start)
  rm -rf $S && mkdir -p $S
  if [ $cpu = 0 ]; then
    NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
    export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
    PY=/opt/torch/.venv/bin/python3
    bin=/tmp/vinfer-16b/vinfer
    TD=$root/.build/gpu-testdata
    clip=$TD/clip1080p30.mp4 model=$TD/yolox_nano_416_dyn.onnx dec=nvdec
    provider="provider: cuda
    provider_options: {cudnn_conv_algo_search: HEURISTIC}"
  else
    PY=python3
    bin=${VINFER_BIN:-$root/bin/vinfer}
    TD=$root/assets/videos
    clip=$TD/car-detection.mp4 model=$root/assets/models/yolox_nano_416.onnx dec=cpu provider="provider: cpu"
  fi
  [ -x "$bin" ] || { echo "memory-16: no $bin (run scripts/gpu/check-16b.sh first, or set VINFER_BIN)" >&2; exit 1; }
  # the configuration lies beside the clip: the API's file streams must be in its directory
  cfg=$TD/memory-16.yaml
  cat >"$cfg" <<EOF
models:
  - name: yolox
    path: $model
    $provider
    max_batch: 8
    max_delay: 2ms
streams: []
EOF
  if [ $cpu = 0 ]; then
    nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu,utilization.decoder --format=csv,noheader -l 10 >$S/nvidia-smi.csv 2>&1 &
    echo $! >$S/smi.pid
  fi
  # vinfer in its own session; the driver, then SIGINT to vinfer, in another
  setsid nohup "$bin" run --config "$cfg" --http 127.0.0.1:18080 --jsonl none --log-level info >$S/vinfer.log 2>&1 </dev/null &
  vp=$!
  echo $vp >$S/vinfer.pid
  setsid nohup bash -c "$PY '$root/scripts/gpu/memory_driver.py' --url http://127.0.0.1:18080 --pid $vp --clip '$clip' \
    --model yolox --decoder $dec --seconds $secs --max 16 --out $S/memory.json >$S/driver.log 2>&1; kill -INT $vp;
    for _ in \$(seq 60); do kill -0 $vp 2>/dev/null || break; sleep 1; done; [ -f $S/smi.pid ] && kill \$(cat $S/smi.pid); touch $S/done" \
    </dev/null >/dev/null 2>&1 &
  end=$((SECONDS + (secs + 30 < 570 ? secs + 30 : 570)))
  while [ $SECONDS -lt $end ] && [ ! -e $S/done ]; do sleep 5; done
  tail -5 $S/vinfer.log
  cat $S/driver.log ;;
collect)
  for _ in $(seq 240); do [ -e $S/done ] && break; sleep 1; done
  mkdir -p "$OUT" && cp $S/* "$OUT"/ 2>/dev/null
  tail -c 3000 $S/driver.log
  grep -E '^summary|total:' $S/vinfer.log | tail -3
  [ -e $S/done ] || { echo "memory-16: still running" >&2; exit 1; } ;;
*) echo "usage: memory-16.sh start [SECONDS [--cpu]] | collect" >&2; exit 2 ;;
esac
