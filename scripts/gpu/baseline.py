#!/usr/bin/env python3
"""The Python baseline: what a user would write instead of vinfer. Each stream is a thread that
decodes the clip with OpenCV (cv2.VideoCapture, FFmpeg on the CPU), letterboxes it with
cv2.resize + numpy (YOLOX-Nano: BGR, 0-255, top-left on 114), and runs ONNX Runtime with the
same CUDA plugin EP (session.run on host numpy arrays, batch 1). Prints one JSON line:
throughput and frame->result latency.

usage: python3 scripts/gpu/baseline.py CLIP.mp4 MODEL.onnx STREAMS SECONDS
"""
import json
import sys
import threading
import time

import cv2
import numpy as np

from ort_common import cuda_session


def letterbox(img, size=416):
    h, w = img.shape[:2]
    r = min(size / h, size / w)
    nw, nh = int(w * r), int(h * r)
    canvas = np.full((size, size, 3), 114, dtype=np.uint8)
    canvas[:nh, :nw] = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
    return np.ascontiguousarray(canvas.transpose(2, 0, 1)[None].astype(np.float32))


def main():
    clip, model, streams, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    sess = cuda_session(model)
    iname = sess.get_inputs()[0].name
    sess.run(None, {iname: np.zeros((1, 3, 416, 416), np.float32)})  # warm-up
    lat, counts = [], [0] * streams
    lock = threading.Lock()
    stop = time.perf_counter() + seconds

    def worker(i):
        cap = cv2.VideoCapture(clip)
        mine = []
        while time.perf_counter() < stop:
            t = time.perf_counter()
            ok, img = cap.read()
            if not ok:
                cap.set(cv2.CAP_PROP_POS_FRAMES, 0)
                continue
            out = sess.run(None, {iname: letterbox(img)})[0]
            _ = out.shape
            mine.append((time.perf_counter() - t) * 1000)
            counts[i] += 1
        with lock:
            lat.extend(mine)

    t0 = time.perf_counter()
    th = [threading.Thread(target=worker, args=(i,)) for i in range(streams)]
    for t in th:
        t.start()
    for t in th:
        t.join()
    el = time.perf_counter() - t0
    lat.sort()
    print(json.dumps({"mode": "python-baseline", "streams": streams, "frames": sum(counts), "seconds": el,
                      "fps": sum(counts) / el, "latency_p50_ms": lat[len(lat) // 2],
                      "latency_p99_ms": lat[int(len(lat) * 0.99)], "opencv": cv2.__version__,
                      "cv2_threads": cv2.getNumThreads()}), flush=True)


if __name__ == "__main__":
    main()
