#!/usr/bin/env python3
"""Model-only ONNX Runtime CUDA throughput of a model and its float16 rewrite (`vinfer fp16`),
NCHW and NHWC (the CUDA EP's prefer_nhwc), side by side in one process: ROUNDS rounds, each
running every variant at every batch in turn, inputs and outputs bound to device memory (IO
binding over torch CUDA tensors). Also the float16 outputs' relative RMS error against float32
on the same input. One JSON line per figure.

usage: fp16_bench.py FP32.onnx FP16.onnx [batches...]   (env ROUNDS=3, BENCH_SECONDS=3, CUDNN=HEURISTIC)
"""
import json
import os
import sys
import time

import numpy as np
import torch

from ort_common import cuda_session

TYPES = {"tensor(float)": (np.float32, torch.float32), "tensor(float16)": (np.float16, torch.float16)}


def bind(sess, x):
    """Binds x to the input and device tensors of the right shapes to every output."""
    io = sess.io_binding()
    io.bind_input(sess.get_inputs()[0].name, "cuda", 0, np.float32, list(x.shape), x.data_ptr())
    outs = sess.run(None, {sess.get_inputs()[0].name: x[:1].cpu().numpy()})
    keep = []
    for o, ref in zip(sess.get_outputs(), outs):
        npt, tt = TYPES[o.type]
        shape = [x.shape[0]] + list(ref.shape[1:])
        t = torch.empty(shape, device="cuda", dtype=tt)
        io.bind_output(o.name, "cuda", 0, npt, shape, t.data_ptr())
        keep.append(t)
    return io, keep


def main():
    fp32, fp16 = sys.argv[1], sys.argv[2]
    batches = [int(b) for b in sys.argv[3:]] or [8, 16, 32]
    rounds, secs = int(os.environ.get("ROUNDS", 3)), float(os.environ.get("BENCH_SECONDS", 3))
    cudnn = os.environ.get("CUDNN", "HEURISTIC")
    variants = {}
    for prec, path in (("fp32", fp32), ("fp16", fp16)):
        for nhwc in ("0", "1"):
            variants[(prec, nhwc)] = cuda_session(path, options={"prefer_nhwc": nhwc, "cudnn_conv_algo_search": cudnn})
    s0 = variants[("fp32", "0")]
    shape = s0.get_inputs()[0].shape
    h, w = shape[2], shape[3]
    torch.manual_seed(0)
    xs = {b: torch.rand((b, 3, h, w), device="cuda", dtype=torch.float32) * 255 for b in batches}
    # accuracy of every variant against FP32 NCHW on the same input
    ref = s0.run(None, {s0.get_inputs()[0].name: xs[batches[0]].cpu().numpy()})
    for k, s in variants.items():
        got = s.run(None, {s.get_inputs()[0].name: xs[batches[0]].cpu().numpy()})
        rms = max(float(np.sqrt(((g.astype(np.float64) - r) ** 2).sum() / max((r.astype(np.float64) ** 2).sum(), 1e-30)))
                  for g, r in zip(got, ref))
        print(json.dumps({"mode": "fp16-accuracy", "precision": k[0], "nhwc": k[1], "rel_rms_vs_fp32_nchw": rms}), flush=True)
    bound = {(k, b): bind(s, xs[b]) for k, s in variants.items() for b in batches}
    for (k, b), (io, _) in bound.items():  # warm-up (cuDNN algorithm choice, memory planning)
        for _ in range(5):
            variants[k].run_with_iobinding(io)
    torch.cuda.synchronize()
    for r in range(1, rounds + 1):
        for b in batches:
            for k, s in variants.items():
                io = bound[(k, b)][0]
                n, t = 0, time.perf_counter()
                while time.perf_counter() - t < secs:
                    for _ in range(5):
                        s.run_with_iobinding(io)
                    torch.cuda.synchronize()
                    n += 5
                el = time.perf_counter() - t
                print(json.dumps({"mode": "model-only", "round": r, "batch": b, "precision": k[0], "nhwc": k[1],
                                  "images_per_s": n * b / el, "ms_per_run": el * 1000 / n}), flush=True)


if __name__ == "__main__":
    main()
