#!/usr/bin/env bash
# Issue 28 item 2 on the GPU machine, from the repository root, once ONNX Runtime's CUDA EP is
# assembled in /opt/vinfer-gpu (../shared/gpu/README.md). Carried: .build/gpuplates
# (scripts/gpu/build-plates.sh). Each run is bounded by timeout --preserve-status.
#   read    one stream of plate.mp4 with the plate detector (provider: cuda) and the recognizer
#           as its cascade (provider: cuda, as: plate), decoder nvdec, then decoder cpu (the same
#           models on the CPU provider): plate detections, reads, reads containing B6H920 with
#           the spaces removed, the most frequent reads, the voted plate of the last frame (the
#           nvdec path crops the plate's box without rectifying it). On the development machine's
#           CPU path: 300 plates, 300 reads, 153 B6H920, 81 B:6H920, 59 EB6H920, voted B6H920.
#   bench   STREAMS (64) nvdec streams of the clip, the detector alone, then with the recognizer
#           on every plate every frame, then every 500ms: wall seconds, frames/s, crops/s,
#           the wall time relative to the detector alone
# Results: $OUT/check-plates.log, $OUT/plates.csv (run,streams,wall_s,frames,crops).
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-plates.log") 2>&1
root=$PWD
streams=${STREAMS:-64}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
D=$root/.build/gpuplates
B=/tmp/vinfer-plates
mkdir -p $B
z=zstd
[ -x .gpu/zstd ] && z=$root/.gpu/zstd
"$z" -d -q -f $D/vinfer.zst -o $B/vinfer && chmod +x $B/vinfer || exit 1
"$z" -d -q -c $D/models.tar.zst | tar -xf - -C $B || exit 1
nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader

# config FILE PROVIDER DECODER STREAMS CASCADE: CASCADE is "" (none), "every" or a duration.
config() {
  local casc=""
  case $5 in
  "") ;;
  every) casc=", cascade: [{model: ocr, as: plate}]" ;;
  *) casc=", cascade: [{model: ocr, as: plate, every: $5}]" ;;
  esac
  {
    echo "models:"
    echo "  - {name: plates, path: $B/hyperlpr3_y5fu_320x_sim.onnx, family: plate, provider: $2, max_batch: 16$casc}"
    echo "  - {name: ocr, kind: ocr, path: $B/paddleocr_en_number_mobile_v2.0_rec.onnx, labels: $B/paddleocr_en_dict.txt,"
    echo "     input: {width: 160, height: 32}, provider: $2, max_batch: 64}"
    echo "streams:"
    for i in $(seq 1 "$4"); do echo "  - {id: s$i, source: $D/plate.mp4, model: plates, decoder: $3}"; done
    echo "output: {http: none}"
  } >"$1"
}

echo "== read"
for dec in nvdec cpu; do
  prov=cuda
  [ $dec = cpu ] && prov=cpu
  config $B/read-$dec.yaml $prov $dec 1 every
  timeout --preserve-status -k 5 120 $B/vinfer run --config $B/read-$dec.yaml --all-frames >$B/read-$dec.jsonl 2>$B/read-$dec.err
  echo "read $dec: exit $?, lines $(wc -l <$B/read-$dec.jsonl), plate detections $(grep -o '"label":"plate"' $B/read-$dec.jsonl | wc -l)," \
    "reads $(grep -o '"kind":"ocr","text":"[^"]*"' $B/read-$dec.jsonl | wc -l)," \
    "containing B6H920 $(grep -o '"kind":"ocr","text":"[^"]*"' $B/read-$dec.jsonl | tr -d ' ' | grep -c 'B6H920')," \
    "last voted $(grep -o '"plate":{[^}]*}' $B/read-$dec.jsonl | tail -1)"
  grep -o '"kind":"ocr","text":"[^"]*"' $B/read-$dec.jsonl | sort | uniq -c | sort -rn | head -4
  grep -iE 'error|refused|cascade' $B/read-$dec.err | head -5
done
cp $B/read-nvdec.err "$OUT/read-nvdec.err"

echo "== bench: $streams nvdec streams"
echo "run,streams,wall_s,frames,crops" >"$OUT/plates.csv"
base=""
for run in detector every 500ms; do
  c=$run
  [ $run = detector ] && c=""
  config $B/bench-$run.yaml cuda nvdec "$streams" "$c"
  t0=$(date +%s.%N)
  timeout --preserve-status -k 5 150 $B/vinfer run --config $B/bench-$run.yaml --all-frames >$B/bench-$run.jsonl 2>$B/bench-$run.err
  rc=$?
  wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b - a}')
  frames=$(grep -c '"frame":' $B/bench-$run.jsonl)
  crops=$(grep -o '"kind":"ocr"' $B/bench-$run.jsonl | wc -l)
  echo "$run,$streams,$wall,$frames,$crops" >>"$OUT/plates.csv"
  [ -z "$base" ] && base=$wall
  awk -v r=$run -v rc=$rc -v w=$wall -v f=$frames -v c=$crops -v b=$base 'BEGIN{printf "%s: exit %d, %.2f s, %d frames (%.0f/s), %d crops (%.0f/s), %.3fx the detector alone\n", r, rc, w, f, f/w, c, c/w, w/b}'
  grep -iE 'error|cascade' $B/bench-$run.err | head -3
done
