#!/usr/bin/python3
"""Writes a dynamic-batch copy of a batch-1 ONNX detector (YOLOX-Nano): the first dimension of
every graph input and output becomes the symbol 'batch', and Reshape target shapes that hard-code
a batch of 1 get 0 ("copy the input's dimension", ONNX Reshape with allowzero=0).

usage: /usr/bin/python3 scripts/gpu/make-dynamic-batch.py IN.onnx OUT.onnx   (needs python3-onnx)
"""
import sys

import onnx
from onnx import numpy_helper


def main(src, dst):
    m = onnx.load(src)
    g = m.graph
    for v in list(g.input) + list(g.output):
        d = v.type.tensor_type.shape.dim[0]
        d.ClearField("dim_value")
        d.dim_param = "batch"
    del g.value_info[:]  # stale batch-1 shapes; ORT re-infers them
    inits = {i.name: i for i in g.initializer}
    consts = {n.output[0]: n for n in g.node if n.op_type == "Constant"}
    changed = 0
    for n in g.node:
        if n.op_type != "Reshape":
            continue
        name = n.input[1]
        if name in inits:
            arr = numpy_helper.to_array(inits[name]).copy()
            if arr.size and arr[0] == 1:
                arr[0] = 0
                inits[name].CopyFrom(numpy_helper.from_array(arr, name))
                changed += 1
        elif name in consts:
            t = consts[name].attribute[0].t
            arr = numpy_helper.to_array(t).copy()
            if arr.size and arr[0] == 1:
                arr[0] = 0
                t.CopyFrom(numpy_helper.from_array(arr, t.name))
                changed += 1
    onnx.checker.check_model(m)
    onnx.save(m, dst)
    print(f"{dst}: dynamic batch, {changed} Reshape(s) patched")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
