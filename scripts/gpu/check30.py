#!/usr/bin/env python3
"""Issue 30's GPU benchmark (scripts/gpu/check-30.sh runs it on the GPU machine; stdlib only).

One `vinfer run` serves CAMS (600) looping realtime 1080p30 H.264 cameras on NVDEC with
`activity: {mode: idle}` plus REFS (8) full-rate reference cameras of the same clip, side by
side. The clip (scripts/gpu/build-30.sh) is 54 s still then 6 s of a person walking in; the
cameras are added through POST /api/streams one every STAGGER/CAMS seconds, so that the 6 s
bursts rotate: about 10 % of the cameras see activity at any moment. Measured over MEASURE
seconds after the last camera was added: NVDEC and GPU utilisation (nvidia-smi), device and
host memory per camera (before and after the cameras), p99 latency of the streams' inferred
frames (vinfer_stream_latency_seconds, cameras while full, references), the time from a wake's
start to its first result (the API's activity figures), the shared decoders, and every
camera's scene events of each complete loop against the references' (type, zone/line,
direction, count; time within one GOP + 200 ms). Writes $OUT/check-30.json, samples.csv,
events.csv; prints a summary.
"""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

OUT = os.environ.get("OUT", "/tmp/vinfer-out")
CAMS = int(os.environ.get("CAMS", "600"))
REFS = int(os.environ.get("REFS", "8"))
STAGGER = float(os.environ.get("STAGGER", "60"))
MEASURE = float(os.environ.get("MEASURE", "150"))
PORT = int(os.environ.get("PORT", "18080"))
IDLE_AFTER = os.environ.get("IDLE_AFTER", "5s")
CLIP_SECONDS = float(os.environ.get("CLIP_SECONDS", "60"))
# a loop's events are counted from a third into the still part: a burst's events and those its
# end brings (zone.leave, line crossings as tracks end after the clip wraps) stay together
SHIFT = CLIP_SECONDS / 3
GOP = 1.0
# a dry run on a machine without GPU: DECODER=cpu PROVIDER=cpu VINFER=path CLIP=path (a smaller clip)
DECODER = os.environ.get("DECODER", "nvdec")
PROVIDER = os.environ.get("PROVIDER", "cuda")
B = "/tmp/vinfer-30"
ROOT = os.getcwd()
SRC = os.path.join(ROOT, ".build/gpu30")
API = f"http://127.0.0.1:{PORT}"

# the README's scene of the bundled sample, normalised to the frame
SCENE = {
    "zones": [{"name": "table", "normalized": True, "classes": ["person"], "inertia": 3, "loiter": "5s",
               "polygon": [[0.4948, 0.8102], [0.7422, 0.8102], [0.7422, 1.0], [0.4948, 1.0]]}],
    "lines": [{"name": "exit", "normalized": True, "classes": ["person"], "points": [[0.8073, 0.6944], [0.8073, 1.0]]}],
}


def log(*a):
    print(*a, flush=True)


def http(method, path, body=None, timeout=10):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(API + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return r.read()


def smi():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu,utilization.decoder,memory.used",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20).stdout
        g, d, m = [float(x) for x in out.splitlines()[0].split(",")]
        return g, d, m
    except Exception as e:  # noqa: BLE001
        log("nvidia-smi:", e)
        return -1.0, -1.0, -1.0


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def streams():
    return json.loads(http("GET", "/api/streams?scope=local", timeout=30))["streams"]


def latency_buckets(prefixes):
    """Sums vinfer_stream_latency_seconds buckets of the streams whose id starts with one of prefixes."""
    text = http("GET", "/metrics", timeout=30).decode()
    out = {p: collections.Counter() for p in prefixes}
    for line in text.splitlines():
        if not line.startswith("vinfer_stream_latency_seconds_bucket{"):
            continue
        labels, value = line.rsplit(" ", 1)
        lab = dict(kv.split("=", 1) for kv in labels[labels.index("{") + 1:-1].split(","))
        sid, le = lab.get("stream", "").strip('"'), lab.get("le", "").strip('"')
        for p in prefixes:
            if sid.startswith(p):
                out[p][le] += float(value)
    return out


def p99(before, after):
    le = sorted(after, key=lambda x: float("inf") if x == "+Inf" else float(x))
    cum = [(x, after[x] - before.get(x, 0)) for x in le]
    total = cum[-1][1] if cum else 0
    if total <= 0:
        return None, 0
    for x, c in cum:
        if c >= 0.99 * total:
            return x, int(total)
    return "+Inf", int(total)


def stream_decl(sid, clip, activity):
    d = {"id": sid, "source": clip, "model": "yolox", "decoder": DECODER, "loop": True, "realtime": True}
    d.update(SCENE)
    if activity:
        d["activity"] = {"mode": "idle", "idle_after": IDLE_AFTER}
    return d


def add(decl):
    for attempt in range(40):
        try:
            http("POST", "/api/streams", decl, timeout=30)
            return True
        except urllib.error.HTTPError as e:
            msg = e.read().decode(errors="replace")
            if e.code in (429, 503) or "busy" in msg:
                time.sleep(0.25)
                continue
            log(f"add {decl['id']}: HTTP {e.code}: {msg.strip()}")
            return False
        except Exception as e:  # noqa: BLE001
            log(f"add {decl['id']}: {e}")
            time.sleep(0.25)
    return False


def events_by_loop(path):
    """stream → loop → Counter of event keys, and stream → loop → [(key, pts within the loop)]."""
    counts = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    maxpts = collections.defaultdict(float)
    try:
        f = open(path)
    except OSError:
        return counts, times, maxpts
    with f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("type") in ("track.start", "track.end"):
                continue
            key = f'{e.get("type")} zone={e.get("zone", "")} line={e.get("line", "")} dir={e.get("direction", "")}'
            pts = float(e.get("pts", 0)) - SHIFT
            if pts < 0:
                continue
            loop = int(pts // CLIP_SECONDS)
            counts[e["stream"]][loop][key] += 1
            times[e["stream"]][loop].append((key, pts - loop * CLIP_SECONDS))
    return counts, times, maxpts


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(B, exist_ok=True)
    if os.environ.get("VINFER"):
        shutil.copy(os.environ["VINFER"], f"{B}/vinfer")
    else:
        subprocess.run(["zstd", "-d", "-q", "-f", os.path.join(SRC, "vinfer.zst"), "-o", f"{B}/vinfer"], check=True)
    os.chmod(f"{B}/vinfer", 0o755)
    clip = f"{B}/cam.mp4"
    shutil.copy(os.environ.get("CLIP", os.path.join(SRC, "cam1080p30.mp4")), clip)
    model = os.environ.get("MODEL", os.path.join(SRC, "yolox_nano_416.onnx"))
    events = f"{B}/events.jsonl"
    if os.path.exists(events):
        os.remove(events)
    cfg = f"{B}/run.yaml"
    first = stream_decl("ref00", clip, False)
    with open(cfg, "w") as f:
        f.write("models:\n")
        opts = "provider_options: {cudnn_conv_algo_search: HEURISTIC}, " if PROVIDER == "cuda" else ""
        f.write(f"  - {{name: yolox, path: {model}, provider: {PROVIDER}, {opts}max_batch: 32, max_delay: 5ms, score_threshold: 0.3}}\n")
        f.write(f"sources: {{max_streams: {CAMS + REFS + 16}, max_opening: 64}}\n")
        f.write(f"output: {{events: {events}}}\n")
        f.write("streams:\n")
        f.write(f"  - {json.dumps(first)}\n")
    g0, d0, m0 = smi()
    log(f"before vinfer: GPU {g0}% NVDEC {d0}% memory {m0} MiB")
    vlog = open(f"{OUT}/vinfer.log", "w")
    os.environ.setdefault("VINFER_NVDEC_IDLE", "experimental")  # config.NVDECIdleEnv
    proc = subprocess.Popen([f"{B}/vinfer", "run", "--config", cfg, "--http", f"127.0.0.1:{PORT}", "--jsonl", "none",
                             "--log-level", "info"], stdout=vlog, stderr=subprocess.STDOUT)
    uptime = {}
    res = {"cams": CAMS, "refs": REFS, "stagger_s": STAGGER, "measure_s": MEASURE, "idle_after": IDLE_AFTER}
    try:
        for _ in range(240):
            try:
                http("GET", "/api/streams")
                break
            except Exception:  # noqa: BLE001
                time.sleep(0.5)
        else:
            raise SystemExit("vinfer API did not come up")
        time.sleep(8)  # ref00 running: the model loaded, one decoder
        g, d, m1 = smi()
        r1 = rss_kib(proc.pid)
        for i in range(1, REFS):
            add(stream_decl(f"ref{i:02d}", clip, False))
        time.sleep(8)
        g, d, mref = smi()
        rref = rss_kib(proc.pid)
        per_decoder = (mref - m1) / max(REFS - 1, 1)
        res.update(mem_one_ref_mib=m1, mem_refs_mib=mref, device_mib_per_full_stream=per_decoder,
                   host_kib_per_full_stream=(rref - r1) / max(REFS - 1, 1))
        log(f"{REFS} full-rate references: device {mref} MiB ({per_decoder:.0f} MiB per full-rate nvdec stream), RSS {rref} KiB")
        t0 = time.time()
        added = 0
        for i in range(CAMS):
            target = t0 + i * STAGGER / CAMS
            if time.time() < target:
                time.sleep(target - time.time())
            added += add(stream_decl(f"cam{i:03d}", clip, True))
        log(f"added {added}/{CAMS} cameras in {time.time() - t0:.1f}s")
        res["cams_added"] = added
        time.sleep(10)
        lat0 = latency_buckets(["cam", "ref"])
        samples = []
        t1 = time.time()
        with open(f"{OUT}/samples.csv", "w") as sf:
            sf.write("t,gpu_util,nvdec_util,mem_mib,rss_kib,full,gated,idle,parked,ended\n")
            while time.time() - t1 < MEASURE:
                g, d, m = smi()
                st = streams()
                c = collections.Counter()
                for s in st:
                    if not s.get("id", "").startswith("cam"):
                        continue
                    a = s.get("activity_state") or {}
                    c[a.get("state", "?")] += 1
                    c["parked"] += bool(a.get("parked"))
                    c["ended"] += s.get("state") in ("ended", "failed")
                row = (round(time.time() - t1, 1), g, d, m, rss_kib(proc.pid), c["full"], c["gated"], c["idle"], c["parked"], c["ended"])
                samples.append(row)
                sf.write(",".join(str(x) for x in row) + "\n")
                sf.flush()
                time.sleep(5)
        lat1 = latency_buckets(["cam", "ref"])
        st = streams()
        uptime.update({s.get("id"): float(s.get("uptime_seconds") or 0) for s in st})
        cams = [s for s in st if s.get("id", "").startswith("cam")]
        acts = [s.get("activity_state") or {} for s in cams]
        n = max(len(samples), 1)
        avg = lambda k: sum(r[k] for r in samples) / n  # noqa: E731
        res.update(gpu_util_mean=avg(1), nvdec_util_mean=avg(2), nvdec_util_max=max((r[2] for r in samples), default=-1),
                   mem_mib_mean=avg(3), rss_kib_mean=avg(4), full_mean=avg(5), gated_mean=avg(6), idle_mean=avg(7),
                   parked_mean=avg(8), ended_at_end=samples[-1][9] if samples else -1)
        res["device_mib_per_camera"] = (res["mem_mib_mean"] - mref) / max(added, 1)
        res["host_kib_per_camera"] = (res["rss_kib_mean"] - rref) / max(added, 1)
        woke = sum(a.get("woke_results", 0) for a in acts)
        res["wakes"] = sum(a.get("wakes", 0) for a in acts)
        res["wake_to_first_result_ms_mean"] = sum(a.get("wake_ms", 0) * a.get("woke_results", 0) for a in acts) / max(woke, 1)
        res["wake_to_first_result_ms_max"] = max((a.get("wake_max_ms", 0) for a in acts), default=0)
        res["woke_results"] = woke
        res["burst_units"] = sum(a.get("burst_access_units", 0) for a in acts)
        res["burst_ms_per_wake"] = sum(a.get("burst_ms", 0) for a in acts) / max(res["wakes"], 1)
        res["key_frame_probes"] = sum(a.get("key_frame_probes", 0) for a in acts)
        res["frames_gated"] = sum(a.get("frames_gated", 0) for a in acts)
        res["cut"] = sum(a.get("cut", 0) for a in acts)
        res["idle_off"] = sorted({a.get("idle_off") for a in acts if a.get("idle_off")})[:5]
        res["cams_not_running"] = collections.Counter(s.get("state") for s in cams if s.get("state") != "running")
        res["unsampled"] = sum(a.get("unsampled", 0) for a in acts)
        idle_held = [a.get("held_bytes", 0) for a in acts if a.get("state") == "idle"]
        res["gate_host_kib_per_idle_camera"] = sum(idle_held) / max(len(idle_held), 1) / 1024
        for p in ("cam", "ref"):
            q, total = p99(lat0[p], lat1[p])
            res[f"p99_latency_{p}_le_s"] = q
            res[f"latency_frames_{p}"] = total
        try:
            res["metrics_pool"] = [l for l in http("GET", "/metrics", timeout=30).decode().splitlines()
                                   if l.startswith("vinfer_decoder_pool_")]
            held = sum(float(l.rsplit(" ", 1)[1]) for l in res["metrics_pool"] if l.startswith("vinfer_decoder_pool_decoders{"))
            res["pool_decoders_alive_end"] = held
            # device memory of a camera without a decoder: what the cameras added, less the
            # decoders alive (shared, warm, held by active cameras) at a full-rate stream's size
            if res.get("parked_mean", 0) > 0:
                res["device_mib_per_idle_camera_est"] = (res["mem_mib_mean"] - mref - held * per_decoder) / res["parked_mean"]
        except Exception as e:  # noqa: BLE001
            log("metrics:", e)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=90)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        vlog.close()
    res["exit_status"] = proc.returncode

    # events: every complete loop of every camera against the references' loops
    counts, times, _ = events_by_loop(events)
    def complete(s):  # loops (from SHIFT on) that ended 3 s before the end of the measure
        return range(0, max(0, int((uptime.get(s, 0) - 3 - SHIFT) // CLIP_SECONDS)))

    refs = [s for s in uptime if s.startswith("ref")]
    ref_loops = collections.Counter()
    for s in refs:
        for loop in complete(s):
            ref_loops[json.dumps(sorted(counts[s][loop].items()))] += 1
    want = None
    if ref_loops:
        want = dict(json.loads(ref_loops.most_common(1)[0][0]))
    res["reference_loop_events"] = want
    res["reference_loop_variants"] = {k: v for k, v in ref_loops.items()}
    ref_times = collections.defaultdict(list)
    for s in refs:
        for loop, ev in times[s].items():
            for k, t in ev:
                ref_times[k].append(t)
    ok = bad = 0
    late = []
    mism = []
    with open(f"{OUT}/events.csv", "w") as ef:
        ef.write("stream,loop,events,match\n")
        for s in sorted(uptime):
            if not s.startswith("cam"):
                continue
            for loop in complete(s):
                got = dict(counts[s][loop])
                match = got == want
                ok += match
                bad += not match
                if not match and len(mism) < 20:
                    mism.append({"stream": s, "loop": loop, "got": got})
                ef.write(f"{s},{loop},{sum(got.values())},{int(match)}\n")
                for k, t in times[s][loop]:
                    if ref_times[k]:
                        late.append(min(abs(t - r) for r in ref_times[k]))
    res["camera_loops_matching"] = ok
    res["camera_loops_differing"] = bad
    res["mismatches"] = mism
    if late:
        late.sort()
        res["event_time_diff_s_max"] = late[-1]
        res["event_time_diff_s_p99"] = late[int(0.99 * (len(late) - 1))]
        res["events_later_than_gop_plus_200ms"] = sum(x > GOP + 0.2 for x in late)
    with open(f"{OUT}/check-30.json", "w") as f:
        json.dump(res, f, indent=1)
    log(json.dumps(res, indent=1))


if __name__ == "__main__":
    sys.exit(main())
