#!/usr/bin/env bash
# Runs ON THE GPU MACHINE, from the folder scripts/gpu/stage-16.sh made, once ONNX Runtime's CUDA
# EP is in /opt/vinfer-gpu (../shared/gpu/README.md): issue 16's comparison in one sitting, with
# the binaries staged side by side (bin/new/: this tree; bin/base/: the commit it was compared
# with, when staged).
#   tests   the app's GPU tests (go test -run 'GPU|NVDEC' ./app, static test binary) of each
#   decode  NVDEC decode-only, 16 and 32 streams (vinfer-bench -mode decode, steady window)
#   bench   vinfer-bench's own engine end to end, 16 and 32 streams (-mode e2e), when staged
#   run     `vinfer run` with 16 and 32 nvdec streams of the 1080p clip for RUN_SECONDS (35),
#           each staged vinfer: the progress lines' 10 s windows (the first, with decoder
#           creation, left out), the summary with the GPU counters, nvidia-smi every 2 s
# STEPS selects ("tests decode bench run"), STREAMS the stream counts ("16 32"), VARIANTS extra
# model lines for bin/new as NAME=yaml;yaml (e.g. "w4x2=workers: 4;inflight: 2").
# Writes $OUT/check-16.log (everything) and $OUT/results.jsonl (one JSON object per figure).
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-16.log") 2>&1
root=$PWD
mkdir -p app
steps=${STEPS:-tests decode bench run}
streams=${STREAMS:-16 32}
secs=${RUN_SECONDS:-35}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
TD=$root/.build/gpu-testdata
export VINFER_GPU_TESTDATA=$TD
B=/tmp/vinfer-16
mkdir -p $B
for z in bin/*/*.zst; do
  d=$B/$(dirname "${z#bin/}")
  mkdir -p "$d"
  .gpu/zstd -d -q -f "$z" -o "$d/$(basename "$z" .zst)" && chmod +x "$d/$(basename "$z" .zst)"
done
ls -la $B/*
nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used --format=csv
has() { [[ " $steps " == *" $1 "* ]]; }
result() { echo "$1" >>"$OUT/results.jsonl"; echo "RESULT $1"; }

if has tests; then
  for v in new base; do
    [ -x $B/$v/app.test ] || continue
    echo "== tests ($v)"
    (cd $root/app && timeout -s KILL 150 $B/$v/app.test -test.v -test.count=1 -test.timeout 140s -test.run 'GPU|NVDEC' 2>&1 |
      grep -Ev '^=== (RUN|PAUSE|CONT)')
    echo "tests ($v) exit ${PIPESTATUS[0]}"
  done
fi

bench=$B/new/vinfer-bench
if has decode && [ -x $bench ]; then
  for n in $streams; do
    echo "== decode-only, $n streams"
    r=$(timeout -s KILL 60 $bench -mode decode -clip $TD/clip1080p30.h264 -streams $n -repeat 0 -duration 14s -settle 4s)
    result "{\"what\":\"decode\",\"streams\":$n,\"bench\":$r}"
  done
fi
if has bench && [ -x $bench ]; then
  for n in $streams; do
    echo "== vinfer-bench engine end to end, $n streams"
    r=$(VINFER_CUDNN_ALGO=HEURISTIC timeout -s KILL 90 $bench -mode e2e -model $TD/yolox_nano_416_dyn.onnx -clip $TD/clip1080p30.h264 \
      -streams $n -repeat 0 -duration 14s -settle 4s)
    result "{\"what\":\"bench-e2e\",\"streams\":$n,\"bench\":$r}"
  done
fi

# config N EXTRA: N nvdec streams of the clip on the YOLOX-Nano of configs/gpu.yaml, EXTRA lines
# (separated by ;) added to the model.
config() {
  local f=$B/run-$1-$RANDOM.yaml
  {
    echo "models:"
    echo "  - name: yolox"
    echo "    path: $TD/yolox_nano_416_dyn.onnx"
    echo "    provider: cuda"
    echo "    provider_options: {cudnn_conv_algo_search: HEURISTIC}"
    echo "    max_batch: 8"
    echo "    max_delay: 2ms"
    echo "    score_threshold: 0.3"
    [ -n "$2" ] && tr ';' '\n' <<<"$2" | sed 's/^ */    /'
    echo "streams:"
    for i in $(seq -w 1 "$1"); do
      echo "  - {id: cam$i, source: $TD/clip1080p30.mp4, model: yolox, decoder: nvdec, loop: true}"
    done
  } >"$f"
  echo "$f"
}

# run NAME BIN N EXTRA: vinfer run for $secs; prints the windows and one result line.
run() {
  local name=$1 bin=$2 n=$3 cfg log smi
  cfg=$(config "$n" "$4")
  log=$B/$name-$n.log
  smi=$B/$name-$n.smi
  echo "== vinfer run ($name), $n streams, ${secs}s"
  nvidia-smi --query-gpu=utilization.gpu,utilization.decoder,memory.used --format=csv,noheader,nounits -l 2 >"$smi" &
  local sp=$!
  timeout -s INT -k 30 "$secs" "$bin" run --config "$cfg" --http none --jsonl $B/run.jsonl --log-level info 2>"$log"
  echo "exit $? (124: stopped by SIGINT as planned)"
  kill $sp 2>/dev/null
  grep -Ev '^\[' "$log" | tail -20
  # total fps of each 10 s window after the first
  local w
  w=$(grep -o 'total [0-9.]* fps' "$log" | awk 'NR>1{printf "%s%s", s, $2; s=","}')
  local u
  u=$(awk -F', ' 'NR>2{g+=$1; d+=$2; n++} END{if(n) printf "%.0f,%.0f", g/n, d/n}' "$smi")
  echo "windows: $w  (gpu%,nvdec%): $u  detection lines: $(wc -l <$B/run.jsonl)"
  result "{\"what\":\"vinfer-run\",\"binary\":\"$name\",\"streams\":$n,\"seconds\":$secs,\"window_fps\":[$w],\"gpu_nvdec_util\":[${u:-}],\"extra\":\"$4\"}"
}

if has run; then
  for n in $streams; do
    [ -x $B/base/vinfer ] && run base $B/base/vinfer "$n" ""
    [ -x $B/new/vinfer ] && run new $B/new/vinfer "$n" ""
    if [ -n "${VARIANTS:-}" ] && [ -x $B/new/vinfer ]; then
      IFS='|' read -ra vs <<<"$VARIANTS"
      for v in "${vs[@]}"; do run "new-${v%%=*}" $B/new/vinfer "$n" "${v#*=}"; done
    fi
  done
fi
echo "== done"
