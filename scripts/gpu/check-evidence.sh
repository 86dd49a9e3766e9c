#!/usr/bin/env bash
# Evidence on the GPU path, ON THE GPU MACHINE (after scripts/gpu/check-16b.sh unpacked the
# binaries on the same warm machine): `vinfer run` with one realtime nvdec stream of the 1080p
# clip, a zone over the whole picture and evidence recording zone.enter; after 25 s the API's
# recorded events are read and each one's clip (MP4) and best-frame snapshot (JPEG) fetched.
# Writes $OUT/evidence.json (the list), $OUT/evidence-check.log; clips and JPEGs are checked for
# their magic bytes and size. Snapshots decode the buffered coded video on the CPU: no frame is
# copied from the GPU for evidence.
set -uo pipefail
OUT=${OUT:-/tmp/vinfer-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/evidence-check.log") 2>&1
root=$PWD
NV=/opt/torch/.venv/lib/python3.12/site-packages/nvidia
export LD_LIBRARY_PATH=/opt/vinfer-gpu:$NV/cu13/lib:$NV/cudnn/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export VINFER_ORT_LIB=${VINFER_ORT_LIB:-/opt/torch/.venv/lib/python3.12/site-packages/onnxruntime/capi/libonnxruntime.so.1.30.0}
B=/tmp/vinfer-16b
TD=$root/.build/gpu-testdata
W=/tmp/vinfer-ev
rm -rf $W && mkdir -p $W
cat >$W/config.yaml <<EOC
models:
  - {name: yolox, path: $TD/yolox_nano_416_dyn.onnx, provider: cuda, max_batch: 8}
streams:
  - id: cam
    source: $TD/clip1080p30-nob.mp4
    model: yolox
    decoder: nvdec
    realtime: true
    loop: true
    zones:
      - {name: all, polygon: [[0, 0], [1920, 0], [1920, 1080], [0, 1080]], inertia: 2}
evidence:
  dir: $W/evidence
  pre: 2s
  post: 2s
  events: [zone.enter]
output:
  http: 127.0.0.1:18082
  jsonl: $W/events.jsonl
EOC
source scripts/gpu/stop.sh
stop_after 40 20 $B/vinfer run --config $W/config.yaml --log-level info >$W/vinfer.log 2>&1 &
vp=$!
sleep 30
curl -s 'http://127.0.0.1:18082/api/evidence?limit=20' >$OUT/evidence.json
python3 - "$OUT/evidence.json" <<'PY'
import json, sys, urllib.request
d = json.load(open(sys.argv[1]))
items = d.get("events") or d.get("items") or d
print("recorded events:", len(items))
ok = 0
for it in items[:6]:
    for k, magic in (("clip_url", b"ftyp"), ("snapshot_url", b"\xff\xd8")):
        u = it.get(k)
        if not u:
            print(it.get("id"), k, "missing", {x: it.get(x) for x in ("has_clip", "has_snapshot", "state")})
            continue
        try:
            b = urllib.request.urlopen("http://127.0.0.1:18082" + u, timeout=10).read()
        except Exception as e:
            print(it.get("id"), k, "error", e); continue
        good = magic in b[:16]
        ok += good
        print(it.get("id"), k, len(b), "bytes", "ok" if good else "BAD MAGIC")
print("fetched ok:", ok)
PY
wait $vp
run_rc=$?
grep -v '^\[' $W/vinfer.log | tail -13
ls -la $W/evidence/* 2>/dev/null | head -20
exit $run_rc # not 0: vinfer crashed or failed to stop (the log's last line says how)
