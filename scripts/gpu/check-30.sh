#!/usr/bin/env bash
# Issue 30's GPU check, ON THE GPU MACHINE from the repository root, once ONNX Runtime's CUDA EP
# is assembled in /opt/vinfer-gpu (../shared/gpu/README.md). Carried: .build/gpu30
# (scripts/gpu/build-30.sh: vinfer.zst, cam1080p30.mp4, yolox_nano_416.onnx).
# scripts/gpu/check30.py runs one `vinfer run` with CAMS (600) idle-decoding nvdec cameras added
# STAGGER (60) s apart in all, so their activity bursts rotate (10 % active), and REFS (8)
# full-rate references of the same clip; it measures for MEASURE (150) s: NVDEC/GPU
# utilisation, memory per camera, p99 latency, wake → first result, the shared decoders, and
# compares every camera's events per loop with the references'. Bounded by LIMIT (450) s.
# Results: $OUT/check-30.log, check-30.json, samples.csv, events.csv, vinfer.log (tail).
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
export OUT
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-30.log") 2>&1
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
PY=${PY:-/opt/torch/.venv/bin/python3}
[ -x .gpu/zstd ] && export PATH=$PWD/.gpu:$PATH
command -v zstd >/dev/null || { echo "zstd missing (carry .gpu/zstd)"; exit 1; }
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader
echo "commit $(cat .build/gpu30/commit 2>/dev/null)"
timeout --preserve-status -k 20 "${LIMIT:-450}" "$PY" scripts/gpu/check30.py
rc=$?
echo "check30.py exit status $rc"
grep -E '^summary:|^  total:|^  activity:|^  shared decoders:|fatal error|panic' "$OUT/vinfer.log" | head -20
grep -ciE 'error' "$OUT/vinfer.log" | sed 's/^/vinfer.log lines with "error": /'
grep -iE 'error' "$OUT/vinfer.log" | sort | uniq -c | sort -rn | head -10
tail -c 200000 "$OUT/vinfer.log" >"$OUT/vinfer.tail.log" && rm -f "$OUT/vinfer.log"
exit $rc
