#!/usr/bin/env python3
"""Model-only ONNX Runtime CUDA throughput per batch size, inputs and outputs bound to device
memory (IO binding over torch CUDA tensors), on the GPU machine. Also checks that the
dynamic-batch model gives batch item i the same output as a batch of one.

usage: python3 scripts/gpu/model_bench.py MODEL.onnx [batches...]   (prints JSON lines)
"""
import json
import sys
import time

import numpy as np
import torch

from ort_common import cuda_session


def main():
    model = sys.argv[1]
    batches = [int(b) for b in sys.argv[2:]] or [1, 2, 4, 8, 16, 32]
    sess = cuda_session(model)
    iname, oname = sess.get_inputs()[0].name, sess.get_outputs()[0].name
    oshape = sess.get_outputs()[0].shape
    torch.manual_seed(0)
    single = None
    for b in batches:
        x = torch.rand((b, 3, 416, 416), device="cuda", dtype=torch.float32) * 255
        if single is not None:
            x[0] = single[0]
        out = torch.empty((b, oshape[1], oshape[2]), device="cuda", dtype=torch.float32)
        io = sess.io_binding()
        io.bind_input(iname, "cuda", 0, np.float32, list(x.shape), x.data_ptr())
        io.bind_output(oname, "cuda", 0, np.float32, list(out.shape), out.data_ptr())
        for _ in range(10):
            sess.run_with_iobinding(io)
        torch.cuda.synchronize()
        if single is None:
            single = (x[:1].clone(), out[:1].clone())
        else:
            diff = (out[0] - single[1][0]).abs().max().item()
            if diff > 1e-2:
                print(json.dumps({"mode": "model-check", "batch": b, "max_abs_diff_vs_batch1": diff}))
        n = max(20, 2000 // b)
        t = time.perf_counter()
        for _ in range(n):
            sess.run_with_iobinding(io)
        torch.cuda.synchronize()
        el = time.perf_counter() - t
        print(json.dumps({"mode": "model-python-iobinding", "batch": b, "runs": n, "ms_per_run": el * 1000 / n,
                          "images_per_s": n * b / el}), flush=True)


if __name__ == "__main__":
    main()
