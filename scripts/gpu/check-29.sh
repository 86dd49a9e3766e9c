#!/usr/bin/env bash
# Issue 29's GPU checks, ON THE GPU MACHINE from the repository root, once ONNX Runtime's CUDA EP
# is assembled in /opt/vinfer-gpu (../shared/gpu/README.md). Carried: .build/gpu29 (vinfer.zst,
# a static build: scripts/gpu/build-29.sh) and .build/gpu-testdata (scripts/gpu/testdata.sh).
#   scan    scripts/gpu/sigscan.py: which native library installs which signal handler, and
#           whether with SA_ONSTACK (item 2)
#   stop    RUNS (6) runs of `vinfer run` with STREAMS (32) looping nvdec streams, each stopped by
#           SIGINT after STOP_AFTER (20) s, a second SIGINT and a SIGTERM 0.2 s later: exit status,
#           whether the summary was printed, seconds from SIGINT to exit, fatal errors (item 2)
#   rss     scripts/soak.sh over the same streams for RSS_MINUTES (7): RSS, Go heap, C heap in
#           use and held, goroutines, fds, threads every 10 s into $OUT/soak/soak.csv, the slopes
#           of the first and last half and whether RSS levelled off (item 8); Go heap profiles
#           at a quarter and at the end in $OUT/soak/
# STEPS picks them (default "scan stop"). Results: $OUT/check-29.log, $OUT/soak/.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-29.log") 2>&1
root=$PWD
steps=${STEPS:-scan stop}
streams=${STREAMS:-32}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
PY=${PY:-/opt/torch/.venv/bin/python3}
TD=$root/.build/gpu-testdata
B=/tmp/vinfer-29
mkdir -p $B
z=zstd
[ -x .gpu/zstd ] && z=$root/.gpu/zstd
"$z" -d -q -f .build/gpu29/vinfer.zst -o $B/vinfer && chmod +x $B/vinfer || exit 1
has() { [[ " $steps " == *" $1 "* ]]; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader

cfg=$B/run.yaml
{
  echo "models:"
  echo "  - {name: yolox, path: $TD/yolox_nano_416.onnx, provider: cuda, provider_options: {cudnn_conv_algo_search: HEURISTIC}, max_batch: 8, max_delay: 2ms, score_threshold: 0.3}"
  echo "streams:"
  for i in $(seq -w 1 "$streams"); do
    echo "  - {id: cam$i, source: $TD/clip1080p30.mp4, model: yolox, decoder: nvdec, loop: true}"
  done
  echo "output: {jsonl: none, http: none}"
} >"$cfg"

if has scan; then
  echo "== scan: signal handlers installed by the native libraries"
  timeout -k 5 120 "$PY" scripts/gpu/sigscan.py "$TD/yolox_nano_416.onnx"
  echo "scan exit status $?"
fi

# one_run NAME SECONDS: starts vinfer, waits SECONDS, SIGINT (+ a second SIGINT and a
# SIGTERM), waits up to 60 s for the exit.
one_run() {
  local name=$1 secs=$2 log=$B/$1.log
  $B/vinfer run --config "$cfg" --log-level debug >"$log" 2>&1 &
  local pid=$! t=0
  while [ $t -lt "$secs" ] && kill -0 $pid 2>/dev/null; do
    sleep 5
    t=$((t + 5))
  done
  local t0
  t0=$(date +%s.%N)
  kill -INT $pid 2>/dev/null
  sleep 0.2
  kill -INT $pid 2>/dev/null
  kill -TERM $pid 2>/dev/null
  local w=0
  while kill -0 $pid 2>/dev/null && [ $w -lt 600 ]; do sleep 0.1; w=$((w + 1)); done
  kill -0 $pid 2>/dev/null && { echo "$name: still running 60 s after SIGINT; SIGKILL"; kill -KILL $pid; }
  wait $pid
  local rc=$?
  local dt
  dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}')
  echo "$name: exit status $rc, stop took ${dt}s, summary $(grep -c '^summary:' "$log"), fatal $(grep -c 'fatal error' "$log")"
  grep -E 'fatal error|SA_ONSTACK|signal stack|signal handler' "$log" | head -8
  grep -A3 '^summary:' "$log" | head -4
}

if has stop; then
  for r in $(seq 1 "${RUNS:-6}"); do
    echo "== stop run $r: $streams nvdec streams, SIGINT after ${STOP_AFTER:-20}s"
    one_run stop$r "${STOP_AFTER:-20}"
  done
  cp $B/stop1.log "$OUT/stop1.log"
fi
if has rss; then
  echo "== rss: $streams nvdec streams for ${RSS_MINUTES:-7} min (scripts/soak.sh)"
  CONFIG=$cfg VINFER=$B/vinfer MINUTES=${RSS_MINUTES:-7} OUT=$OUT/soak ADDR=127.0.0.1:18291 scripts/soak.sh
  echo "soak exit status $? (0 levelled off, 1 still growing, 2 failed)"
  tail -3 "$OUT/soak/vinfer.log"
fi
