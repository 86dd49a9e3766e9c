#!/usr/bin/env bash
# Issue 28 item 1 (FP16 on the GPU), ON THE GPU MACHINE from the repository root, once ONNX
# Runtime's CUDA EP is assembled in /opt/vinfer-gpu (../shared/gpu/README.md). Carried:
# .build/gpu28 (scripts/gpu/build-28.sh) and .build/gpu-testdata (clip, YOLOX-Nano).
#   large  the YOLOv8m-sized model (make-yolov8m.py, made here), side by side in one run:
#          model-only (vinfer-bench -mode model: the product's engine) and end to end
#          (vinfer-bench -mode e2e, 16 nvdec streams: what `vinfer run` runs), FP32 NCHW, FP32
#          NHWC, FP16 NCHW, FP16 NHWC, at BATCHES (8 32), ROUNDS (3) rounds interleaved
#   dets   YOLOX-Nano on the clip (one nvdec stream, no loop) through `vinfer run`, FP32 then
#          FP16: detections matched per frame (compare_dets.py: IoU >= 0.9, |score| <= 0.02,
#          counts per class)
#   auto   `vinfer run` load log of precision: auto on both models (what the load chose, its
#          timings)
# STEPS picks them (default "dets auto large"); one call may run 8 minutes, so on one warm
# machine: STEPS="dets auto", then STEPS=large BATCHES=8, then STEPS=large BATCHES=32 (E2E=0:
# model-only). Results: $OUT/results.jsonl (one JSON line per figure; the ranges cover every
# call on this machine, kept in /tmp/vinfer-28/results.jsonl), $OUT/check-28.log.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-28.log") 2>&1
root=$PWD
steps=${STEPS:-dets auto large}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
PY=${PY:-/opt/torch/.venv/bin/python3}
TD=$root/.build/gpu-testdata
C=$TD/clip1080p30.mp4
B=/tmp/vinfer-28
mkdir -p $B
z=zstd
[ -x .gpu/zstd ] && z=$root/.gpu/zstd
for f in .build/gpu28/*.zst; do
  "$z" -d -q -f "$f" -o "$B/$(basename "$f" .zst)" && chmod +x "$B/$(basename "$f" .zst)" || exit 1
done
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
has() { [[ " $steps " == *" $1 "* ]]; }
result() { echo "$1" | tee -a "$OUT/results.jsonl" >>"$B/results.jsonl"; echo "RESULT $1"; }
export XDG_CACHE_HOME=$B/xdg # the optimized-model and rewrite caches

# run_cfg NAME PRECISION MODEL: `vinfer run` of one nvdec stream of the clip, no loop, detections
# into $B/NAME.jsonl, the log into $B/NAME.log.
run_cfg() {
  local name=$1 prec=$2 m=$3
  printf 'models:\n  - {name: m, path: %s, provider: cuda, provider_options: {cudnn_conv_algo_search: HEURISTIC}, max_batch: 8, precision: %s, score_threshold: 0.3}\nstreams:\n  - {id: cam1, source: %s, model: m, decoder: nvdec}\n' \
    "$m" "$prec" "$C" >$B/$name.yaml
  timeout --preserve-status -k 5 150 $B/vinfer run --config $B/$name.yaml --http none --jsonl $B/$name.jsonl --log-level info >$B/$name.log 2>&1
  echo "$name: exit $?, $(wc -l <$B/$name.jsonl) lines"
  grep -E 'precision|float16|loaded' $B/$name.log | head -6
}

if has dets; then
  echo "== dets: YOLOX-Nano FP32 vs FP16 on $C"
  run_cfg dets-fp32 fp32 $TD/yolox_nano_416.onnx
  run_cfg dets-fp16 fp16 $TD/yolox_nano_416.onnx
  cp $B/dets-fp16.log "$OUT/"
  r=$($PY scripts/gpu/compare_dets.py $B/dets-fp32.jsonl $B/dets-fp16.jsonl)
  result "{\"what\":\"dets-yolox-fp16-vs-fp32\",\"compare\":${r:-null}}"
fi

L=$B/yolov8m_random.onnx
if has auto || has large; then
  [ -f "$L" ] || timeout 300 $PY scripts/gpu/make-yolov8m.py "$L"
fi
if has auto; then
  for m in $TD/yolox_nano_416.onnx $L; do
    echo "== auto: $(basename $m)"
    run_cfg auto-$(basename $m .onnx) auto $m
  done
fi

# bench WHAT TIMEOUT ARGS: one vinfer-bench measurement as a result line.
bench() {
  local what=$1 t=$2 r
  shift 2
  r=$(timeout -s KILL "$t" $B/vinfer-bench "$@" -timeout $((t - 5))s 2>$B/bench.err)
  local rc=$?
  [ $rc = 0 ] && [ -n "$r" ] || { echo "$what: exit $rc"; tail -3 $B/bench.err; r=null; }
  result "{\"what\":\"$what\",\"bench\":$r}"
}
if has large; then
  for round in $(seq 1 "${ROUNDS:-3}"); do
    for b in ${BATCHES:-8 32}; do
      for v in "fp32 0" "fp32 1" "fp16 0" "fp16 1"; do
        set -- $v
        bench "model-$1-nhwc$2-b$b-r$round" 60 -mode model -model "$L" -batch "$b" -precision "$1" -nhwc "$2" -duration 5s
        [ "${E2E:-1}" = 1 ] && bench "e2e16-$1-nhwc$2-b$b-r$round" 80 -mode e2e -model "$L" -clip "$C" -streams 16 -batch "$b" -precision "$1" -nhwc "$2" -duration 10s -settle 4s
      done
    done
  done
  # ranges over the rounds: images/s (model) and steady fps (e2e) per variant, and the ratio to
  # FP32 NCHW of the same batch
  $PY - "$B/results.jsonl" <<'PYEOF' | tee -a "$OUT/results.jsonl"
import json, re, sys, collections
v = collections.defaultdict(list)
for l in open(sys.argv[1]):
    r = json.loads(l)
    m = re.match(r"(model|e2e16)-(fp\d\d)-nhwc(\d)-b(\d+)-r\d+", r["what"])
    if not m or not r.get("bench"):
        continue
    b = r["bench"]
    v[m.groups()].append(b.get("images_per_s") or b.get("steady_fps") or 0)
for (mode, p, n, bt), xs in sorted(v.items()):
    base = v.get((mode, "fp32", "0", bt)) or [0]
    bm = sum(base) / len(base)
    print(json.dumps({"what": f"range-{mode}-{p}-nhwc{n}-b{bt}", "min": min(xs), "max": max(xs),
                      "x_fp32_nchw": [round(min(xs) / bm, 3), round(max(xs) / bm, 3)] if bm else None}))
PYEOF
fi
