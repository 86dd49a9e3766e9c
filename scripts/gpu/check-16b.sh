#!/usr/bin/env bash
# Issue 16's figures in one sitting, ON THE GPU MACHINE from the repository root, once ONNX
# Runtime's CUDA EP is assembled in /opt/vinfer-gpu (../shared/gpu/README.md), with what
# scripts/gpu/stage-16b.sh built carried: .build/gpu16b (static vinfer, vinfer-bench, app.test,
# codec.test, zstd-compressed) and .build/gpu-testdata (clips, dynamic-batch YOLOX-Nano).
# Every figure comes from the product's code: vinfer-bench drives the product's decoder, engine
# and app (cmd/vinfer-bench), `run` the vinfer binary itself.
#   decode    NVDEC decode-only (file source + codec.NVDECStream), STREAMS (16 32) streams
#   e2e       the app end to end (app.New, counting sink: what `vinfer run` runs), same streams
#   run       `vinfer run` itself with the same streams for RUN_SECONDS (30): 10 s windows
#   paced     80% of the e2e peak as realtime streams of the clip without B-frames: p99
#             (PACED_BFRAMES=1: also the clip with B-frames)
#   large     a YOLOv8m-sized model with random weights (scripts/gpu/make-yolov8m.py, made here):
#             model-only (the product's engine) vs e2e with 16 streams, batch LARGE_BATCH (8)
#   baseline  the Python baseline (scripts/gpu/baseline.py), BASELINE_STREAMS (8 16) threads
#   tests     GPU tests: codec (NVDEC, snapshot download) and app (GPU|NVDEC)
# STEPS picks them (default "decode e2e run paced"; the rest: STEPS="large baseline tests", a
# second call on the same warm machine: one call may run 10 minutes). Each result is one JSON line
# in $OUT/results.jsonl and in /tmp/vinfer-16b/results.jsonl (kept across calls), then a summary
# line over all the results so far; the log goes to $OUT/check-16b.log.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-16b.log") 2>&1
root=$PWD
steps=${STEPS:-decode e2e run paced}
streams=${STREAMS:-16 32}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
PY=${PY:-/opt/torch/.venv/bin/python3}
TD=$root/.build/gpu-testdata
export VINFER_GPU_TESTDATA=$TD
M=$TD/yolox_nano_416_dyn.onnx
C=$TD/clip1080p30.mp4
B=/tmp/vinfer-16b
mkdir -p $B
z=zstd
[ -x .gpu/zstd ] && z=$root/.gpu/zstd
for f in .build/gpu16b/*.zst; do
  [ -e "$f" ] || continue
  "$z" -d -q -f "$f" -o "$B/$(basename "$f" .zst)" && chmod +x "$B/$(basename "$f" .zst)"
done
ls -la $B
nvidia-smi --query-gpu=index,name,driver_version,memory.total,memory.used,clocks.sm --format=csv
has() { [[ " $steps " == *" $1 "* ]]; }
source scripts/gpu/stop.sh
result() { echo "$1" | tee -a "$OUT/results.jsonl" >>"$B/results.jsonl"; echo "RESULT $1"; }
# smi NAME: GPU and NVDEC utilization every second into $B/NAME.smi; smi_mean: their means
# after the first 4 s (start-up), "gpu%,nvdec%".
smi() { nvidia-smi --query-gpu=utilization.gpu,utilization.decoder,memory.used --format=csv,noheader,nounits -l 1 >"$B/$1.smi" & SMI=$!; SMIF=$B/$1.smi; }
smi_mean() { kill $SMI 2>/dev/null; wait $SMI 2>/dev/null; awk -F', ' 'NR>4{g+=$1; d+=$2; n++} END{if(n) printf "%.0f,%.0f", g/n, d/n}' "$SMIF"; }
# bench WHAT TIMEOUT ARGS: one vinfer-bench measurement as a result line
bench() {
  local what=$1 t=$2 r u
  shift 2
  echo "== $what: vinfer-bench $*"
  smi "$what"
  r=$(timeout -s KILL "$t" $B/vinfer-bench "$@" -timeout $((t - 5))s)
  local rc=$?
  u=$(smi_mean)
  [ $rc = 0 ] && [ -n "$r" ] || { echo "$what: exit $rc"; r=null; }
  result "{\"what\":\"$what\",\"gpu_nvdec_util\":[${u:-}],\"bench\":$r}"
}

if has decode; then
  for n in $streams; do bench "decode-$n" 60 -mode decode -clip "$C" -streams "$n" -duration 14s -settle 4s; done
fi
if has e2e; then
  for n in $streams; do bench "e2e-$n" 100 -mode e2e -model "$M" -clip "$C" -streams "$n" -batch 8 -duration 20s -settle 6s; done
fi

# run N: `vinfer run` with N nvdec streams of the clip on the dynamic-batch YOLOX-Nano for
# RUN_SECONDS, stopped with SIGINT; the total fps of each 10 s progress window but the first.
if has run; then
  secs=${RUN_SECONDS:-30}
  for n in $streams; do
    cfg=$TD/run-$n.yaml
    {
      printf 'models:\n  - name: yolox\n    path: %s\n    provider: cuda\n' "$M"
      printf '    provider_options: {cudnn_conv_algo_search: HEURISTIC}\n    max_batch: 8\n    max_delay: 2ms\nstreams:\n'
      for i in $(seq -w 1 "$n"); do echo "  - {id: cam$i, source: $C, model: yolox, decoder: nvdec, loop: true}"; done
    } >"$cfg"
    echo "== vinfer run, $n streams, ${secs}s"
    smi "run-$n"
    stop_after "$secs" 30 $B/vinfer run --config "$cfg" --http none --jsonl $B/run.jsonl --log-level info 2>$B/run-$n.log
    rc=$?
    u=$(smi_mean)
    grep -Ev '^\[' $B/run-$n.log | tail -8
    w=$(grep -o 'total [0-9.]* fps' $B/run-$n.log | awk 'NR>1{printf "%s%s", s, $2; s=","}')
    result "{\"what\":\"run-$n\",\"exit\":$rc,\"streams\":$n,\"seconds\":$secs,\"window_fps\":[$w],\"gpu_nvdec_util\":[${u:-}],\"detection_lines\":$(wc -l <$B/run.jsonl)}"
  done
fi

if has paced; then
  peak=${PEAK:-$($PY -c '
import json, sys
best = 0
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["what"].startswith("e2e-") and r.get("bench"):
        best = max(best, r["bench"]["steady_fps"])
print(round(best))' $B/results.jsonl 2>/dev/null)}
  [ -n "$peak" ] && [ "$peak" != 0 ] || peak=4800
  n=$($PY -c "print(max(1, round(0.8*$peak/30)))")
  clips="$TD/clip1080p30-nob.mp4"
  [ "${PACED_BFRAMES:-0}" = 1 ] && clips="$clips $C"
  for clip in $clips; do
    bench "paced-$n-$(basename "$clip" .mp4)" 120 -mode e2e -paced -model "$M" -clip "$clip" -streams "$n" -batch 8 -duration 30s -settle 10s
  done
fi

if has large; then
  L=$B/yolov8m_random.onnx
  [ -f "$L" ] || $PY scripts/gpu/make-yolov8m.py "$L"
  lb=${LARGE_BATCH:-8}
  bench "large-model-b$lb" 120 -mode model -model "$L" -batch "$lb" -duration 10s
  bench "large-e2e-16-b$lb" 150 -mode e2e -model "$L" -clip "$C" -streams 16 -batch "$lb" -duration 30s -settle 10s
fi

if has baseline; then
  for n in ${BASELINE_STREAMS:-8 16}; do
    echo "== Python baseline, $n threads"
    r=$(timeout -s KILL 90 $PY scripts/gpu/baseline.py "$C" "$M" "$n" 10 2>$B/baseline-$n.err | tail -1)
    [ -n "$r" ] || { tail -5 $B/baseline-$n.err; r=null; }
    result "{\"what\":\"baseline-$n\",\"baseline\":$r}"
  done
fi

if has tests; then
  echo "== codec GPU tests"
  (cd codec && timeout -s KILL 120 $B/codec.test -test.v -test.count=1 -test.timeout 110s -test.run 'NVDEC' 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)')
  echo "== app GPU tests"
  (cd app && timeout -s KILL 200 $B/app.test -test.v -test.count=1 -test.timeout 190s -test.run 'GPU|NVDEC' 2>&1 | grep -Ev '^=== (RUN|PAUSE|CONT)')
fi

# summary over every result of this machine so far: the issue's ratios
$PY - "$B/results.jsonl" <<'EOF' | while read -r l; do result "$l"; done
import json, sys
rs = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    rs[r["what"]] = r
def steady(w):
    r = rs.get(w) or {}
    b = r.get("bench") or {}
    return b.get("steady_fps")
s = {"what": "summary"}
for w in list(rs):
    if w.startswith("decode-"):
        n = w.split("-")[1]
        d, e = steady(w), steady("e2e-" + n)
        s["decode_" + n] = d
        if e and d:
            s["e2e_of_decode_" + n] = round(e / d, 3)
        run = rs.get("run-" + n)
        if run and run["window_fps"] and d:
            s["run_of_decode_" + n] = round(min(run["window_fps"]) / d, 3)
    if w.startswith("paced-"):
        b = rs[w].get("bench") or {}
        s[w + "_p99_ms"] = b.get("latency_p99_ms")
        s[w + "_dropped"] = b.get("dropped")
    if w.startswith("large-model-"):
        m = (rs[w].get("bench") or {}).get("images_per_s")
        e = steady(w.replace("large-model-", "large-e2e-16-"))
        if m and e:
            s["large_e2e_of_model"] = round(e / m, 3)
    if w.startswith("baseline-"):
        b = rs[w].get("baseline") or {}
        e = steady("e2e-16")
        if b.get("fps") and e:
            s["e2e16_over_" + w] = round(e / b["fps"], 2)
print(json.dumps(s))
EOF
echo "== done"
