#!/usr/bin/python3
"""Writes a dynamic-batch copy of a batch-1 ONNX detector (YOLOX-Nano): the first dimension of
every graph input and output becomes the symbol 'batch', and Reshape target shapes that hard-code
a batch of 1 get 0 ("copy the input's dimension", ONNX Reshape with allowzero=0).

With --focus-conv it also replaces YOLOX's Focus block (four strided Slice pairs and a Concat,
space-to-depth by 2) with one equivalent stride-2 2x2 Conv whose weights are one-hot (exact:
each output is one input value times 1). The ORT 1.29 CUDA EP plugin crashes in Slice under the
ORT 1.30 core on the GPU machine; Conv runs there.

usage: /usr/bin/python3 scripts/gpu/make-dynamic-batch.py [--focus-conv] IN.onnx OUT.onnx
(needs python3-onnx and python3-numpy)
"""
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


def focus_to_conv(g):
    """Replaces Slice pairs feeding one Concat (YOLOX Focus) with a one-hot stride-2 Conv."""
    by_out = {n.output[0]: n for n in g.node}
    inits = {i.name: numpy_helper.to_array(i) for i in g.initializer}
    consts = {n.output[0]: numpy_helper.to_array(n.attribute[0].t) for n in g.node if n.op_type == "Constant"}

    def val(name):
        return inits[name] if name in inits else consts[name]

    for cat in [n for n in g.node if n.op_type == "Concat"]:
        pairs = [by_out.get(i) for i in cat.input]
        if len(pairs) != 4 or any(p is None or p.op_type != "Slice" for p in pairs):
            continue
        offsets, src, drop = [], None, []
        for second in pairs:
            first = by_out[second.input[0]]
            if first.op_type != "Slice":
                break
            off = {}
            for sl in (first, second):
                start, axis, step = int(val(sl.input[1])[0]), int(val(sl.input[3])[0]), int(val(sl.input[4])[0])
                if step != 2 or axis not in (2, 3):
                    raise SystemExit(f"{sl.name}: not a stride-2 slice on H or W")
                off[axis] = start
            offsets.append((off[2], off[3]))
            src = first.input[0]
            drop += [first, second]
        if len(offsets) != 4:
            continue
        c = 3
        w = np.zeros((4 * c, c, 2, 2), np.float32)
        for k, (dy, dx) in enumerate(offsets):
            for ch in range(c):
                w[k * c + ch, ch, dy, dx] = 1
        wname = cat.output[0] + "_focus_w"
        g.initializer.append(numpy_helper.from_array(w, wname))
        conv = helper.make_node("Conv", [src, wname], [cat.output[0]], name="Focus_Conv", kernel_shape=[2, 2], strides=[2, 2])
        for n in drop + [cat]:
            g.node.remove(n)
        g.node.insert(0, conv)  # reads only a graph input and an initializer
        return len(drop)
    return 0


def main(src, dst, focus):
    m = onnx.load(src)
    g = m.graph
    if focus:
        print(f"Focus: {focus_to_conv(g)} Slice nodes replaced by one Conv")
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
    args = [a for a in sys.argv[1:] if a != "--focus-conv"]
    main(args[0], args[1], "--focus-conv" in sys.argv)
