#!/usr/bin/env bash
# Runs ON THE GPU MACHINE from the repository root, once the CUDA EP is assembled
# (../shared/gpu/README.md): the measurements of docs/benchmarks-gpu.md, one JSON line each in
# $OUT/bench.jsonl (log in $OUT/bench.log). Needs .build/carry from scripts/gpu/carry.sh.
# Arguments pick phases (default: all). vinfer-bench drives the product's decoder, engine and app
# (cmd/vinfer-bench); issue 16's comparison in one sitting is scripts/gpu/check-16b.sh, the
# memory run scripts/gpu/memory-16.sh.
#   infertest  the infer package's GPU test (IO binding, queued runs) on the CUDA EP
#   model      model-only throughput per batch size (the product's GPU engine)
#   decode     NVDEC decode-only fps (the other possible bottleneck)
#   e2e        the app end to end, unpaced (peak), 16 and 32 streams
#   paced      realtime streams at 80% of the e2e peak: latency p50/p99
#   variants   the engine's settings side by side (workers x inflight, CUDA graph)
#   pymodel    model-only throughput from Python (ORT IO binding over torch tensors)
#   baseline   the Python pipeline a user would write (OpenCV + numpy + ORT CUDA EP)
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/bench.log") 2>&1
source scripts/gpu/env.sh
phases=" ${*:-infertest model decode e2e paced pymodel baseline} "
has() { [[ $phases == *" $1 "* ]]; }
R=$OUT/bench.jsonl
run() { timeout -s KILL "$1" "${@:2}" | tee -a "$R"; }
# HEURISTIC keeps session start-up short; the same for every engine figure so ratios compare.
export VINFER_CUDNN_ALGO=${VINFER_CUDNN_ALGO:-HEURISTIC}
C=$G/gpu-testdata/clip1080p30.mp4
# Unpaced runs loop the clip for 14 s; steady_fps counts from 4 s on (decoders created).
U="-duration 14s -settle 4s"
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm --format=csv,noheader
if has infertest; then
  echo "== infer GPU test"
  (cd infer && timeout -s KILL 120 "$G/bin/infer.test" -test.v -test.run 'DeviceRunCUDA' 2>&1 | grep -Ev '^=== RUN')
fi
if has model; then
  echo "== model only, the product's engine (default lanes and batches in flight)"
  for b in 1 4 8 16 32; do run 60 "$B" -mode model -model "$M" -batch $b -duration 4s; done
fi
has decode && { echo "== decode only"; for n in 16 32; do run 90 "$B" -mode decode -clip "$C" -streams $n $U; done; }
has e2e && { echo "== end to end, unpaced (peak)"; for n in 16 32; do run 90 "$B" -mode e2e -model "$M" -clip "$C" -streams $n -batch 8 $U -timeout 80s; done; }
if has paced; then
  peak=${PEAK:-}
  [ -n "$peak" ] || peak=$(grep '"mode":"e2e"' "$R" | $PY -c 'import sys,json; print(max(json.loads(l).get("steady_fps",0) for l in sys.stdin if not json.loads(l)["paced"]))' 2>/dev/null || echo 2000)
  n=$($PY -c "print(max(1, round(0.8*$peak/30)))")
  echo "== end to end, paced: peak ${peak} fps -> $n realtime streams at 30 fps (80%), clip with and without B-frames"
  for clip in "$G/gpu-testdata/clip1080p30-nob.mp4" "$C"; do
    run 120 "$B" -mode e2e -paced -model "$M" -clip "$clip" -streams $n -batch 8 -duration 25s -settle 8s -timeout 110s
  done
fi
if has variants; then
  echo "== engine settings side by side (model only b8, then e2e 16 streams)"
  for v in "-workers 2 -inflight 1 -graph=false" "-workers 1 -inflight 2" "-workers 2 -inflight 2" "-workers 2 -inflight 3" "-workers 4 -inflight 2"; do
    run 60 "$B" -mode model -model "$M" -batch 8 $v -duration 3s
    run 60 "$B" -mode e2e -model "$M" -clip "$C" -streams 16 $U -batch 8 $v -timeout 50s
  done
fi
has pymodel && { echo "== model only, Python IO binding"; run 150 $PY scripts/gpu/model_bench.py "$M" 1 8 16 32; }
has baseline && { echo "== Python baseline"; for n in ${BASELINE_STREAMS:-1 8 16}; do run 90 $PY scripts/gpu/baseline.py "$C" "$M" $n 10 2>&1 | grep -v CleanUnusedInitializers; done; }
nvidia-smi --query-gpu=memory.used,utilization.gpu,utilization.decoder --format=csv,noheader
