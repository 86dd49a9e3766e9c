#!/usr/bin/env bash
# Issue 30's probe micro-benchmark, ON THE GPU MACHINE from the repository root (no ONNX Runtime
# needed). Carried: .build/gpuprobe30 (scripts/gpu/build-probe30.sh). Runs decpool's
# TestNVDECProbeTimes: N (300) idle key-frame probes or 6 s per configuration, on 1 and on 4
# shared NVDEC decoders, the old way (decode, end-of-stream drain, reset: FFmpeg 5.1's H.264
# reset frees the hwaccel, so the next probe sets NVDEC up again) and the new (an H.264 end of
# sequence pushes the picture out, the decoder stays set up), on both 1080p clips; first it
# checks every probed key frame's luma against the software decoder's.
# Then TestNVDECProbeHeldFrame: a probe whose picture its consumer keeps returns (NVDEC used
# to wait for a free frame of its pool after the picture, up to the probe's 20 s context),
# and TestNVDECParkWake: 12 wakes of a stream on the decoder it gave back, flushed (old) or
# parked (new, no H.264 reset): time from the take to the GOP's first picture, set-ups
# ($OUT/wake30.csv: clip, way, wakes, first_ms_mean/max, gop_ms_mean, setups).
# Results: $OUT/check-probe30.log (nvidia-smi line, test log), $OUT/probe30.csv (one row per
# clip, mode, decoders: probes, wall s, probes/s, ms per probe mean/p50/p99 with the wait for a
# free decoder, mean ms per phase send/push/drain (a set-up the old way's reset forces is paid
# in the next probe's send), drains, pushes, set-ups, busy, decoders made).
# Env: N (300), LIMIT (90 s), DECODER=cpu for a dry run with FFmpeg's software decoder.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-probe30.log") 2>&1
root=$PWD
B=/tmp/vinfer-probe30
mkdir -p $B
z=zstd # the GPU machine has none: .gpu/zstd or the one build-probe30.sh carries
command -v zstd >/dev/null || z=$root/.gpu/zstd
[ -x "$z" ] || command -v "$z" >/dev/null || z=$root/.build/gpuprobe30/zstd
"$z" -d -q -f .build/gpuprobe30/decpool.test.zst -o $B/decpool.test && chmod +x $B/decpool.test || exit 1
echo "commit $(cat .build/gpuprobe30/commit 2>/dev/null)"
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
G=$root/.build/gpuprobe30
cd "$root/decpool" # the test's package folder
VINFER_PROBE30_CLIPS=$G/clip1080p30.mp4,$G/clip1080p30-nob.mp4 VINFER_PROBE30_N=${N:-300} \
  VINFER_PROBE30_CSV=$OUT/probe30.csv VINFER_PROBE30_WAKE_CSV=$OUT/wake30.csv VINFER_PROBE30_DECODER=${DECODER:-} \
  timeout --preserve-status -k 5 "${LIMIT:-90}" $B/decpool.test -test.run '^TestNVDEC(ProbeHeldFrame|ProbeTimes|ParkWake)$' -test.v -test.count=1
rc=$?
echo "exit status $rc"
for f in probe30 wake30; do [ -f "$OUT/$f.csv" ] && tr , '\t' <"$OUT/$f.csv"; done # (no `column` on the GPU machine)
exit $rc
