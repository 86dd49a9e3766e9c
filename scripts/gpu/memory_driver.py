#!/usr/bin/env python3
"""Drives a running `vinfer run` through its HTTP API for the memory run of issue 16: every
second it adds or removes one stream (POST /api/streams, DELETE /api/streams/{id}; between 1 and
--max live, a seeded coin), then samples the device memory the product reports
(vinfer_gpu_memory_used_bytes on /metrics, cuMemGetInfo of the whole device) and the process's
host RSS (/proc/PID/status). Standard library only. Writes one JSON object to --out:

    {"mode":"memory", "seconds", "max_streams", "streams_started", "frames",
     "device_mem_used_mb_per_interval": [...], "host_rss_mb_per_10_intervals": [...],
     "after_first_interval_mb", "last_mb", "max_mb",
     "device_mb_first_last_by_streams": {"N": [first, last]}}

usage: memory_driver.py --url http://127.0.0.1:18080 --pid PID --clip CLIP --model yolox
         [--decoder nvdec] [--seconds 600] [--max 16] [--seed 1] --out memory.json
"""
import argparse
import json
import random
import re
import sys
import time
import urllib.error
import urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--url", required=True)
ap.add_argument("--pid", type=int, required=True)
ap.add_argument("--clip", required=True)
ap.add_argument("--model", required=True)
ap.add_argument("--decoder", default="nvdec")
ap.add_argument("--seconds", type=float, default=600)
ap.add_argument("--max", type=int, default=16)
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--out", required=True)
args = ap.parse_args()


def call(method, path, body=None, timeout=30):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(args.url + path, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def device_mb():
    _, b = call("GET", "/metrics")
    m = re.search(rb'^vinfer_gpu_memory_used_bytes\{device="0"\} (\S+)$', b, re.M)
    return float(m.group(1)) / (1 << 20) if m else float("nan")


def rss_mb():
    with open(f"/proc/{args.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def frames():
    _, b = call("GET", "/api/models")
    return sum(m.get("frames", 0) for m in json.loads(b)["models"])


for _ in range(300):  # the server may still be loading the model
    try:
        if call("GET", "/api/streams", timeout=2)[0] == 200:
            break
    except OSError:
        pass
    time.sleep(0.2)
else:
    sys.exit("memory_driver: the API never answered at " + args.url)

rng = random.Random(args.seed)
live, started, used, rss, by = [], 0, [], [], {}
t0 = time.monotonic()
tick = 0
while time.monotonic() - t0 < args.seconds:
    if not live or (len(live) < args.max and rng.random() < 0.5):
        sid = f"m{started:04d}"
        code, b = call("POST", "/api/streams", {"id": sid, "source": args.clip, "model": args.model,
                                                "decoder": args.decoder, "loop": True, "realtime": True})
        if code != 201:
            sys.exit(f"memory_driver: adding {sid}: {code} {b[:300]!r}")
        live.append(sid)
        started += 1
    else:
        sid = live.pop(rng.randrange(len(live)))
        code, b = call("DELETE", f"/api/streams/{sid}")
        if code != 204:
            sys.exit(f"memory_driver: removing {sid}: {code} {b[:300]!r}")
    tick += 1
    time.sleep(max(0, t0 + tick - time.monotonic()))
    mb = device_mb()
    used.append(mb)
    fl = by.setdefault(str(len(live)), [mb, mb])
    fl[1] = mb
    if len(used) % 10 == 1:
        rss.append(rss_mb())
        print(f"memory: {time.monotonic() - t0:4.0f}s {len(live):2d} streams, device {mb:.0f} MB used, "
              f"RSS {rss[-1]:.1f} MB, {frames()} frames", file=sys.stderr, flush=True)
n = frames()
for sid in live:
    call("DELETE", f"/api/streams/{sid}")
res = {"mode": "memory", "seconds": time.monotonic() - t0, "max_streams": args.max, "streams_started": started,
       "frames": n, "device_mem_used_mb_per_interval": used, "host_rss_mb_per_10_intervals": rss,
       "after_first_interval_mb": used[0], "last_mb": used[-1], "max_mb": max(used),
       "device_mb_first_last_by_streams": by}
with open(args.out, "w") as f:
    json.dump(res, f)
print(json.dumps({k: v for k, v in res.items() if k != "device_mem_used_mb_per_interval"}))
