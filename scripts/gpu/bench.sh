#!/usr/bin/env bash
# Runs ON THE GPU MACHINE from the repository root, once the CUDA EP is assembled
# (../shared/gpu/README.md): the ONNX Runtime measurements of docs/benchmarks-gpu.md.
# Reads .build/carry-small (vinfer-bench.zst, clip1080p30.h264) and .build/carry-big
# (clip1080p30.mp4, yolox_nano_416_dyn.onnx), made by scripts/gpu/carry.sh. Writes
# $OUT/bench.log and $OUT/bench.jsonl. Arguments pick phases (default: all).
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/bench.log") 2>&1
phases=" ${*:-pymodel model e2e paced baseline first memory} "
has() { [[ $phases == *" $1 "* ]]; }
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
[ -x /tmp/vinfer-bench ] || .gpu/zstd -d -q -f .build/carry-small/vinfer-bench.zst -o /tmp/vinfer-bench && chmod +x /tmp/vinfer-bench
B=/tmp/vinfer-bench
M=.build/carry-big/yolox_nano_416_dyn.onnx
C=.build/carry-small/clip1080p30.h264
R=$OUT/bench.jsonl
PY=/opt/torch/.venv/bin/python3
run() { timeout -s KILL "$1" "${@:2}" | tee -a "$R"; }
has pymodel && { echo "== model only, Python IO binding"; run 150 $PY scripts/gpu/model_bench.py "$M" 1 2 4 8 16 32; }
has model && { echo "== model only, vinfer engine (2 workers)"; for b in 1 4 8 16 32; do run 60 "$B" -mode model -model "$M" -batch $b -workers 2 -duration 3s; done; }
# The engine runs every batch at the full -batch shape (see pipeline.go): with varying shapes the
# CUDA EP plugin hung in RunWithBinding on 2026-11-30. HEURISTIC keeps session start-up short.
export VINFER_CUDNN_ALGO=${VINFER_CUDNN_ALGO:-HEURISTIC}
has e2e && { echo "== end to end, unpaced (peak)"; for n in 16 32; do run 60 "$B" -mode e2e -model "$M" -clip "$C" -streams $n -repeat 1 -batch 8 -workers 2 -timeout 50s; done; }
if has paced; then
  echo "== end to end, paced at 80% of peak"
  peak=$(grep '"mode":"e2e"' "$R" | $PY -c 'import sys,json; print(max(json.loads(l)["fps"] for l in sys.stdin if not json.loads(l)["paced"]))' 2>/dev/null || echo 1500)
  n=$($PY -c "print(max(1, int(0.8*$peak/30)))")
  echo "peak ${peak} fps -> $n streams at 30 fps"
  run 60 "$B" -mode e2e -model "$M" -clip "$C" -streams $n -paced -duration 15s -settle 3s -batch 8 -workers 2 -timeout 50s
fi
has baseline && { echo "== Python baseline"; for n in 1 8; do run 90 $PY scripts/gpu/baseline.py .build/carry-big/clip1080p30.mp4 "$M" $n 12; done; }
has first && { echo "== first frame, 8 workers"; for v in cold warm; do run 60 "$B" -mode firstframe -variant $v -streams 8 -clip "$C"; done; }
has memory && { echo "== memory, streams added and removed"; run 700 "$B" -mode memory -model "$M" -clip "$C" -streams 16 -duration ${MEMORY_SECONDS:-600}s -batch 8 -workers 2 -timeout 11m; }
nvidia-smi --query-gpu=memory.used,utilization.gpu --format=csv
