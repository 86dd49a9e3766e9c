#!/usr/bin/env bash
# Issue 28 item 1 (FP16 on the GPU), ON THE GPU MACHINE from the repository root, once ONNX
# Runtime's CUDA EP is assembled in /opt/vinfer-gpu (../shared/gpu/README.md). Carried:
# .build/gpu28/vinfer.zst (scripts/gpu/build-28.sh) and .build/gpu-testdata (clip1080p30.mp4,
# car-detection.mp4, yolox_nano_416.onnx). Every step is bounded; one call may run 8 minutes.
#   dets   YOLOX-Nano through `vinfer run` (one nvdec stream, no loop) on car-detection.mp4 and
#          clip1080p30.mp4, FP32 then FP16: detections matched per frame (compare_dets.py:
#          IoU >= 0.9 and |score difference| <= 0.02, counts per class)
#   auto   the load log of precision: auto (what the load chose, its check and timings) for
#          YOLOX-Nano and the YOLOv8m-sized model (make-yolov8m.py, made here)
#   model  model-only, the YOLOv8m-sized model and its `vinfer fp16` rewrite side by side in one
#          process (fp16_bench.py): FP32/FP16 x NCHW/NHWC, batches 8 16 32, ROUNDS (3) rounds
#   e2e    `vinfer run` end to end: STREAMS (32) looping nvdec streams of the 1080p clip on the
#          YOLOv8m-sized model, max_batch E2E_BATCHES (32), E2E_VARIANTS ("fp32 0|fp16 0|fp16 1":
#          precision and prefer_nhwc; add "fp32 1" in a call of its own) in turn, ROUNDS (3)
#          rounds of RUN_SECONDS (25) each: the total fps of the 10 s windows but the first,
#          then the ranges per variant
# STEPS picks them (default "dets auto model"; then STEPS=e2e in a second call, E2E_BATCHES=8 in
# a third). Results: $OUT/results.jsonl (one JSON line per figure), $OUT/check-28.log.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-28.log") 2>&1
root=$PWD
steps=${STEPS:-dets auto model}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
PY=${PY:-/opt/torch/.venv/bin/python3}
TD=$root/.build/gpu-testdata
C=$TD/clip1080p30.mp4
B=/tmp/vinfer-28
mkdir -p $B
export XDG_CACHE_HOME=$B/xdg # the optimized-model and rewrite caches
z=zstd
[ -x .gpu/zstd ] && z=$root/.gpu/zstd
"$z" -d -q -f .build/gpu28/vinfer.zst -o $B/vinfer && chmod +x $B/vinfer || exit 1
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
has() { [[ " $steps " == *" $1 "* ]]; }
result() { echo "$1" | tee -a "$OUT/results.jsonl" >>"$B/results.jsonl"; echo "RESULT $1"; }
source scripts/gpu/stop.sh
CUDNN=${CUDNN:-HEURISTIC}
export CUDNN

# model_yaml MODEL PRECISION BATCH NHWC: the model's declaration
model_yaml() {
  local opts="cudnn_conv_algo_search: $CUDNN"
  [ -n "${4:-}" ] && opts="$opts, prefer_nhwc: \"$4\""
  printf 'models:\n  - {name: m, path: %s, provider: cuda, provider_options: {%s}, max_batch: %s, precision: %s, score_threshold: 0.3}\n' \
    "$1" "$opts" "$3" "$2"
}

# once NAME MODEL PRECISION CLIP: `vinfer run` of one nvdec stream of CLIP, no loop: detections
# into $B/NAME.jsonl, the log into $B/NAME.log.
once() {
  local name=$1
  { model_yaml "$2" "$3" 8; printf 'streams:\n  - {id: cam1, source: %s, model: m, decoder: nvdec}\n' "$4"; } >$B/$name.yaml
  timeout --preserve-status -k 5 150 $B/vinfer run --config $B/$name.yaml --http none --jsonl $B/$name.jsonl --log-level info >$B/$name.log 2>&1
  echo "$name: exit $?, $(wc -l <$B/$name.jsonl) result lines"
  grep -E 'precision|float16' $B/$name.log | head -4
}

if has dets; then
  for clip in $TD/car-detection.mp4 $C; do
    n=$(basename $clip .mp4)
    echo "== dets: YOLOX-Nano FP32 vs FP16 on $n"
    once dets-$n-fp32 $TD/yolox_nano_416.onnx fp32 $clip
    once dets-$n-fp16 $TD/yolox_nano_416.onnx fp16 $clip
    r=$(timeout 60 $PY scripts/gpu/compare_dets.py $B/dets-$n-fp32.jsonl $B/dets-$n-fp16.jsonl)
    result "{\"what\":\"dets-yolox-$n\",\"compare\":${r:-null}}"
  done
  cp $B/dets-car-detection-fp16.log "$OUT/"
fi

L=$B/yolov8m_random.onnx
H=$B/yolov8m_random_fp16.onnx
if has auto || has model || has e2e; then
  [ -f "$L" ] || timeout 300 $PY scripts/gpu/make-yolov8m.py "$L"
fi
if has auto; then
  for m in $TD/yolox_nano_416.onnx $L; do
    echo "== auto: $(basename $m)"
    once auto-$(basename $m .onnx) $m auto $TD/car-detection.mp4
    l=$(grep -m1 'precision auto' $B/auto-$(basename $m .onnx).log | sed 's/"/\\"/g')
    result "{\"what\":\"auto-$(basename $m .onnx)\",\"log\":\"$l\"}"
  done
fi

if has model; then
  [ -f "$H" ] || timeout 120 $B/vinfer fp16 "$L" "$H"
  echo "== model-only: YOLOv8m-sized, FP32 vs FP16, NCHW vs NHWC"
  (cd scripts/gpu && ROUNDS=${ROUNDS:-3} BENCH_SECONDS=${MODEL_SECONDS:-3} timeout -k 5 360 $PY fp16_bench.py "$L" "$H" 8 16 32) |
    while read -r l; do result "$l"; done
  $PY - "$B/results.jsonl" <<'PYEOF' | while read -r l; do result "$l"; done
import json, sys, collections
v = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("mode") == "model-only":
        v[(r["batch"], r["precision"], r["nhwc"])].append(r["images_per_s"])
for (b, p, n), xs in sorted(v.items()):
    base = v.get((b, "fp32", "0"))
    bm = sum(base) / len(base)
    print(json.dumps({"what": f"range-model-b{b}-{p}-nhwc{n}", "images_per_s": [round(min(xs)), round(max(xs))],
                      "x_fp32_nchw_mean": [round(min(xs) / bm, 3), round(max(xs) / bm, 3)]}))
PYEOF
fi

if has e2e; then
  secs=${RUN_SECONDS:-25}
  n=${STREAMS:-32}
  for round in $(seq 1 "${ROUNDS:-3}"); do
    for b in ${E2E_BATCHES:-32}; do
      IFS='|' read -ra variants <<<"${E2E_VARIANTS:-fp32 0|fp16 0|fp16 1}"
      for v in "${variants[@]}"; do
        set -- $v
        name=e2e-$1-nhwc$2-b$b-r$round
        {
          model_yaml "$L" "$1" "$b" "$2"
          printf '    max_delay: 2ms\nstreams:\n'
          for i in $(seq -w 1 "$n"); do echo "  - {id: cam$i, source: $C, model: m, decoder: nvdec, loop: true}"; done
        } >$B/$name.yaml
        echo "== $name: $n streams, ${secs}s"
        stop_after "$secs" 30 $B/vinfer run --config $B/$name.yaml --http none --jsonl none --log-level info 2>$B/$name.log
        rc=$?
        w=$(grep -o 'total [0-9.]* fps' $B/$name.log | awk 'NR>1{printf "%s%s", s, $2; s=","}')
        p=$(grep -m1 -o 'precision [a-z0-9]*: [^;(]*' $B/$name.log | sed 's/"/\\"/g')
        result "{\"what\":\"$name\",\"exit\":$rc,\"streams\":$n,\"window_fps\":[$w],\"precision\":\"$p\"}"
      done
    done
  done
  $PY - "$B/results.jsonl" <<'PYEOF' | while read -r l; do result "$l"; done
import json, re, sys, collections
v = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l)
    m = re.match(r"e2e-(fp\d\d)-nhwc(\d)-b(\d+)-r\d+$", r.get("what", ""))
    if m and r.get("window_fps"):
        w = r["window_fps"]
        v[(int(m.group(3)), m.group(1), m.group(2))].append(sum(w) / len(w))
for (b, p, n), xs in sorted(v.items()):
    base = v.get((b, "fp32", "0"))
    bm = sum(base) / len(base)
    print(json.dumps({"what": f"range-e2e-b{b}-{p}-nhwc{n}", "fps": [round(min(xs)), round(max(xs))],
                      "x_fp32_nchw_mean": [round(min(xs) / bm, 3), round(max(xs) / bm, 3)]}))
PYEOF
fi
