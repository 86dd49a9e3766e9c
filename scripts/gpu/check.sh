#!/usr/bin/env bash
# Runs ON THE GPU MACHINE from the repository root (see docs/benchmarks-gpu.md): builds the
# preprocessing PTX with nvcc, runs the GPU tests against it, then the NVDEC decode-only,
# decode+preprocess and first-frame benchmarks. Expects, built on the development machine by
# scripts/gpu/build.sh and carried with the run: .build/bin/{vinfer-bench,cuda.test,gpu.test,
# codec.test} and .build/gpu-testdata. Writes $OUT/check.log, $OUT/results.jsonl and
# $OUT/preprocess.ptx. Arguments pick phases (default: tests decode pre first).
set -uo pipefail
phases=" ${*:-tests decode pre first} "
has() { [[ $phases == *" $1 "* ]]; }
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check.log") 2>&1
root=$PWD
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm --format=csv
nvcc --version | tail -2
echo "== PTX"
nvcc -ptx -arch=compute_75 -O3 -o "$OUT/preprocess.ptx" cuda/kernels/preprocess.cu && echo "ptx ok: $(grep -c '.entry' "$OUT/preprocess.ptx") entries"
nvcc -cubin -arch=sm_90 -O3 -Xptxas -v -o /tmp/preprocess.cubin cuda/kernels/preprocess.cu 2>&1 | grep -E "registers|spill" | head -4
export VINFER_PREPROCESS_PTX=$OUT/preprocess.ptx VINFER_GPU_TESTDATA=$root/.build/gpu-testdata
if has tests; then
echo "== tests"
(cd cuda && "$root/.build/bin/cuda.test" -test.v -test.count=1 2>&1 | grep -Ev '^=== RUN')
(cd preprocess/gpu && "$root/.build/bin/gpu.test" -test.v -test.run 'Kernel|Reference|Pack' -test.bench Kernel -test.benchtime 5000x 2>&1 | grep -Ev '^=== RUN')
(cd codec && "$root/.build/bin/codec.test" -test.v -test.run NVDEC 2>&1 | grep -Ev '^=== RUN')
fi
B=${VINFER_BENCH:-$root/.build/bin/vinfer-bench}
R=$OUT/results.jsonl
has decode && { echo "== decode-only"; for n in 1 2 4 8 16 32; do timeout -s KILL 120 "$B" -mode decode -streams $n -repeat 3 | tee -a "$R"; done; }
has pre && { echo "== decode + preprocess"; for n in 1 8 16 32; do timeout -s KILL 120 "$B" -mode pre -streams $n -repeat 3 -batch 8 -workers 2 | tee -a "$R"; done; }
has first && { echo "== first frame, 8 workers at once"; for v in cold warm ownctx; do timeout -s KILL 60 "$B" -mode firstframe -variant $v -streams 8 | tee -a "$R"; done; }
has memory && { echo "== memory, streams added and removed"; timeout -s KILL 200 "$B" -mode memory -streams 8 -duration ${MEMORY_SECONDS:-45}s -batch 8 -workers 2 | tee -a "$R"; }
nvidia-smi --query-gpu=memory.used,utilization.gpu,utilization.decoder --format=csv
