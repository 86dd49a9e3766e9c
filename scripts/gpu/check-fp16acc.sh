#!/usr/bin/env bash
# Issue 28 item 1, the float16 accuracy fix (the first quarter of the layers float32, the load
# check comparing detections on real pictures), ON THE GPU MACHINE from the repository root,
# as scripts/gpu/check-28.sh (same carry: scripts/gpu/build-28.sh). Runs its `dets` and `auto`
# steps (YOLOX-Nano FP32 vs FP16 on car-detection.mp4 and the 1080p clip; what auto chose),
# then MODEL=1 adds the model-only step (the YOLOv8m-sized model, ROUNDS rounds, default 2),
# and prints what each FP16 load served: `fp16 (checked: …)` with the probe's detection
# figures, or `fp32 (float16 refused: …)` with why (then the dets compare float32 with itself).
# Results: $OUT/results.jsonl, $OUT/check-28.log, $OUT/precision.txt. Under 8 minutes.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
steps="dets auto"
[ -n "${MODEL:-}" ] && steps="$steps model"
STEPS=$steps ROUNDS=${ROUNDS:-2} timeout --preserve-status -k 10 450 scripts/gpu/check-28.sh
rc=$?
grep -h -E 'precision (fp16|auto):' /tmp/vinfer-28/*.log 2>/dev/null | sort -u | tee "$OUT/precision.txt"
exit $rc
