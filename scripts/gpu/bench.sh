#!/usr/bin/env bash
# Runs ON THE GPU MACHINE from the repository root, once the CUDA EP is assembled
# (../shared/gpu/README.md): the measurements of docs/benchmarks-gpu.md, one JSON line each in
# $OUT/bench.jsonl (log in $OUT/bench.log). Needs .build/carry from scripts/gpu/carry.sh.
# Arguments pick phases (default: all but memory, which takes MEMORY_SECONDS, default 600):
#   infertest  the infer package's GPU test (IO binding, queued runs) on the CUDA EP
#   model      model-only throughput per batch size (vinfer's engine: IO binding, 2 batches in
#              flight per worker, output copied to pinned host memory)
#   decode     NVDEC decode-only fps (the other possible bottleneck)
#   e2e        NVDEC -> fused preprocessing -> ORT CUDA, unpaced (peak), 16 and 32 streams
#   paced      30 fps streams at 80% of the e2e peak: latency p50/p99
#   variants   the engine's settings side by side (workers, batches in flight, async, CUDA graph)
#   pymodel    model-only throughput from Python (ORT IO binding over torch tensors)
#   baseline   the Python pipeline a user would write (OpenCV + numpy + ORT CUDA EP)
#   first      first frame with 8 workers at once, cold and warm
#   memory     device memory over MEMORY_SECONDS with streams added and removed
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/bench.log") 2>&1
source scripts/gpu/env.sh
phases=" ${*:-infertest model decode e2e paced pymodel baseline first} "
has() { [[ $phases == *" $1 "* ]]; }
R=$OUT/bench.jsonl
run() { timeout -s KILL "$1" "${@:2}" | tee -a "$R"; }
# HEURISTIC keeps session start-up short; the same for every engine figure so ratios compare.
export VINFER_CUDNN_ALGO=${VINFER_CUDNN_ALGO:-HEURISTIC}
W=${WORKERS:-2}
E="-batch 8 -workers $W -depth 2 -frames 16"
# Unpaced runs loop the clip for 14 s; steady_fps counts from 4 s on (decoders created).
U="-repeat 0 -duration 14s -settle 4s"
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.sm --format=csv,noheader
if has infertest; then
  echo "== infer GPU test"
  (cd infer && timeout -s KILL 120 "$G/bin/infer.test" -test.v -test.run 'DeviceRunCUDA' 2>&1 | grep -Ev '^=== RUN')
fi
if has model; then
  echo "== model only, vinfer engine ($W workers, 2 batches in flight each)"
  for b in 1 4 8 16 32; do run 60 "$B" -mode model -model "$M" -batch $b -workers $W -depth 2 -duration 4s; done
fi
has decode && { echo "== decode only"; for n in 16 32; do run 90 "$B" -mode decode -clip "$C" -streams $n $U; done; }
has e2e && { echo "== end to end, unpaced (peak)"; for n in 16 32; do run 90 "$B" -mode e2e -model "$M" -clip "$C" -streams $n $U $E -timeout 80s; done; }
if has paced; then
  peak=${PEAK:-}
  [ -n "$peak" ] || peak=$(grep '"mode":"e2e"' "$R" | $PY -c 'import sys,json; print(max(json.loads(l).get("steady_fps",0) for l in sys.stdin if not json.loads(l)["paced"]))' 2>/dev/null || echo 2000)
  n=$($PY -c "print(max(1, round(0.8*$peak/30)))")
  echo "== end to end, paced: peak ${peak} fps -> $n streams at 30 fps (80%), clip with and without B-frames"
  for clip in "$G/gpu-testdata/clip1080p30-nob.h264" "$C"; do
    run 120 "$B" -mode e2e -model "$M" -clip "$clip" -streams $n -paced -duration 25s -settle 8s $E -timeout 110s
  done
fi
if has variants; then
  echo "== engine settings side by side (model only b8, then e2e 16 streams)"
  for v in "-workers 2 -depth 1 -async=false -graph=false" "-workers 1 -depth 2" "-workers 2 -depth 2" "-workers 2 -depth 3" "-workers 4 -depth 2"; do
    run 60 "$B" -mode model -model "$M" -batch 8 $v -duration 3s
  done
  for v in "-workers 2 -depth 1 -async=false -graph=false -frames 6" "-workers 1 -depth 2 -frames 16" "-workers 2 -depth 2 -frames 16" "-workers 4 -depth 2 -frames 16" "-workers 2 -depth 3 -frames 16"; do
    run 60 "$B" -mode e2e -model "$M" -clip "$C" -streams 16 $U -batch 8 $v -timeout 50s
  done
fi
has pymodel && { echo "== model only, Python IO binding"; run 150 $PY scripts/gpu/model_bench.py "$M" 1 8 16 32; }
has baseline && { echo "== Python baseline"; for n in ${BASELINE_STREAMS:-1 8 16}; do run 90 $PY scripts/gpu/baseline.py "$G/gpu-testdata/clip1080p30.mp4" "$M" $n 10 2>&1 | grep -v CleanUnusedInitializers; done; }
has first && { echo "== first frame, 8 workers"; for v in cold warm; do run 60 "$B" -mode firstframe -variant $v -streams 8 -clip "$C"; done; }
has memory && { echo "== memory, streams added and removed"; run $((${MEMORY_SECONDS:-600}+120)) "$B" -mode memory -model "$M" -clip "$C" -streams 16 -duration ${MEMORY_SECONDS:-600}s $E -timeout $((${MEMORY_SECONDS:-600}+100))s; }
nvidia-smi --query-gpu=memory.used,utilization.gpu,utilization.decoder --format=csv,noheader
