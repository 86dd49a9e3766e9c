#!/usr/bin/env bash
# Runs ON THE GPU MACHINE from the repository root, CPU only (no GPU involved): the pipeline
# efficiency benchmark of docs/benchmarks.md ("Pipeline efficiency") on that machine's CPU cores,
# for ONNX Runtime's default intra-op threads, 8 threads and 1 thread.
# Needs .build/bin/pipeline.test, built on the development machine with the static FFmpeg:
#   PKG_CONFIG=$PWD/scripts/pkg-config-static go test -c -tags vinfer_static -o .build/bin/pipeline.test ./e2e/pipeline
# and the git-ignored assets assets/videos/car-detection.mp4 and assets/models/yolox_nano_416.onnx
# (carried with it). Writes $OUT/cpu-efficiency.log.
# Environment: THREADS (default "0 8 1"; 0 = ONNX Runtime's default), STREAMS (default "1 4 16"),
# ROUNDS (best of, default 1), LIMIT (seconds per thread setting, default 190: all three fit
# in one 10-minute device command).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/cpu-efficiency.log") 2>&1
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
export VINFER_BENCH_STREAMS=${STREAMS:-1 4 16}
export VINFER_BENCH_ROUNDS=${ROUNDS:-1}
bin=$root/.build/bin/pipeline.test
for f in "$bin" assets/videos/car-detection.mp4 assets/models/yolox_nano_416.onnx "$VINFER_ORT_LIB"; do
  [ -e "$f" ] || { echo "cpu-efficiency: $f missing"; exit 1; }
done
echo "== $(date -u +%FT%TZ) $(nproc) CPUs; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
lscpu | grep -E '^(Thread|Core|Socket|L3)' || true
echo "streams: $VINFER_BENCH_STREAMS; rounds: $VINFER_BENCH_ROUNDS; ORT: $VINFER_ORT_LIB"
cd e2e/pipeline
for t in ${THREADS:-0 8 1}; do
  echo "== intra-op threads $t (0: ONNX Runtime's default)"
  VINFER_BENCH_THREADS=$t timeout -s KILL "${LIMIT:-190}" "$bin" -test.run XXX -test.bench Efficiency \
    -test.benchtime 1x 2>&1
  echo "exit status $?"
done
