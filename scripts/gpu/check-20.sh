#!/usr/bin/env bash
# Runs ON A TWO-GPU MACHINE (device kind nvidia-h200-x2), from the repository root with
# .build/gpu16b and .build/gpu-testdata carried (scripts/gpu/stage-16b.sh), once ONNX Runtime's
# CUDA EP is in /opt/vinfer-gpu: issue 20's checks in one sitting, one binary.
#   decode   NVDEC decode-only on one GPU and on both (CUDA_VISIBLE_DEVICES), 32 and 64 streams
#   scale    `vinfer run`, 32 and 64 nvdec streams round-robin: on GPU 0 alone, then on both
#   pinned   16 streams with gpu: 1: /metrics must show device="cuda:1" for all, nvidia-smi GPU 1 busy
#   reload   both GPUs busy (32 streams), the model reloaded through the API 5 times: no
#            infer_error drop, decoded = inferred + dropped on every stream
#   memory   5 minutes of streams added and removed through the API while 32 run; device memory
#            of both GPUs sampled every 10 s (must stay flat)
# STEPS selects ("decode scale pinned reload memory"). Writes $OUT/check-20.log and
# $OUT/results.jsonl. Not run yet: the two-GPU kind has not been lent (docs/benchmarks-gpu.md).
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/check-20.log") 2>&1
root=$PWD
steps=${STEPS:-decode scale pinned reload memory}
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
TD=$root/.build/gpu-testdata
B=/tmp/vinfer-20
mkdir -p $B
for z in .build/gpu16b/*.zst; do .gpu/zstd -d -q -f "$z" -o "$B/$(basename "$z" .zst)" && chmod +x "$B/$(basename "$z" .zst)"; done
nvidia-smi --query-gpu=index,name,memory.total --format=csv
has() { [[ " $steps " == *" $1 "* ]]; }
result() { echo "$1" >>"$OUT/results.jsonl"; echo "RESULT $1"; }
port=18420
api() { curl -s --max-time 10 -H 'Content-Type: application/json' "$@"; }

# config N [PIN]: N nvdec streams (pinned to GPU PIN when given), an API on 127.0.0.1:$port.
config() {
  local f=$B/run-$1-${2:-rr}.yaml
  {
    echo "models: [{name: yolox, path: $TD/yolox_nano_416_dyn.onnx, provider: cuda, provider_options: {cudnn_conv_algo_search: HEURISTIC}, max_batch: 8}]"
    echo "output: {http: 127.0.0.1:$port}"
    echo "streams:"
    for i in $(seq -w 1 "$1"); do
      echo "  - {id: cam$i, source: $TD/clip1080p30.mp4, model: yolox, decoder: nvdec, loop: true${2:+, gpu: $2}}"
    done
  } >"$f"
  echo "$f"
}
start() { "$B/vinfer" run --config "$1" --jsonl none 2>"$2" & echo $!; }
waitapi() { for _ in $(seq 120); do api http://127.0.0.1:$port/readyz >/dev/null && return; sleep 1; done; }
total() { api http://127.0.0.1:$port/api/streams | python3 -c 'import json,sys; print(sum(s["inferred"] for s in json.load(sys.stdin)["streams"]))'; }
rate() { # frames inferred per second over 20 s after 15 s of warm-up
  sleep 15; local a b; a=$(total); sleep 20; b=$(total); echo $(((b - a) / 20))
}

if has decode; then
  for n in 32 64; do
    one=$(CUDA_VISIBLE_DEVICES=0 timeout -s KILL 60 $B/vinfer-bench -mode decode -clip $TD/clip1080p30.h264 -streams $n -duration 14s -settle 4s)
    two=$(timeout -s KILL 60 $B/vinfer-bench -mode decode -clip $TD/clip1080p30.h264 -streams $n -duration 14s -settle 4s)
    result "{\"what\":\"decode\",\"streams\":$n,\"one_gpu\":$one,\"two_gpus\":$two}"
  done
fi
if has scale; then
  for n in 32 64; do
    for vis in 0 0,1; do
      pid=$(CUDA_VISIBLE_DEVICES=$vis start "$(config $n)" $B/scale-$n-$vis.log); waitapi
      fps=$(rate); kill -INT $pid; wait $pid
      result "{\"what\":\"vinfer-run\",\"streams\":$n,\"gpus\":\"$vis\",\"fps\":$fps}"
    done
  done
fi
if has pinned; then
  pid=$(start "$(config 16 1)" $B/pinned.log); waitapi; sleep 10
  cuda1=$(api http://127.0.0.1:$port/metrics | grep -c 'vinfer_stream_info{device="cuda:1"')
  smi=$(nvidia-smi --query-gpu=index,utilization.gpu,utilization.decoder --format=csv,noheader)
  kill -INT $pid; wait $pid
  result "{\"what\":\"pinned\",\"streams_on_cuda1\":$cuda1,\"nvidia_smi\":\"$(echo $smi | tr '\n' ' ')\"}"
fi
if has reload; then
  pid=$(start "$(config 32)" $B/reload.log); waitapi; sleep 10
  for i in 1 2 3 4 5; do api -XPOST http://127.0.0.1:$port/api/models/yolox/reload >/dev/null; sleep 3; done
  api http://127.0.0.1:$port/api/streams | python3 -c '
import json,sys
bad=[s["id"] for s in json.load(sys.stdin)["streams"] if s["dropped"]["infer_error"] or s["decoded"] < s["inferred"]]
print(json.dumps({"what":"reload","reloads":5,"streams_with_losses":bad}))' | while read -r l; do result "$l"; done
  kill -INT $pid; wait $pid
fi
if has memory; then
  pid=$(start "$(config 32)" $B/memory.log); waitapi
  for t in $(seq 0 10 300); do
    i=$((t / 10 % 8))
    api -XDELETE http://127.0.0.1:$port/api/streams/extra$i >/dev/null
    api -XPOST http://127.0.0.1:$port/api/streams -d "{\"id\":\"extra$i\",\"source\":\"$TD/clip1080p30.mp4\",\"model\":\"yolox\",\"decoder\":\"nvdec\",\"loop\":true}" >/dev/null
    result "{\"what\":\"memory\",\"t\":$t,\"mib\":\"$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | tr '\n' ' ')\"}"
    sleep 10
  done
  kill -INT $pid; wait $pid
fi
echo "== done"
