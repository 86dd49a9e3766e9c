#!/usr/bin/env python3
"""Writes a YOLOv8m-sized detector with random weights, for throughput only (issue 16: the
model-bound regime). Runs where `onnx` and `numpy` are (the GPU machine's /opt/torch/.venv, or a
development machine), so the ~100 MB file never travels.

    make-yolov8m.py OUT.onnx [--size 640] [--seed 1]

The network has YOLOv8m's shape (width 0.75, depth 0.67: stem 48, stages 96/192/384/576 with
2/4/4/2 C2f bottlenecks, SPPF, the PAN neck with 2-bottleneck C2f blocks, a decoupled head per
level with 64- and 192-channel branches; about 25M parameters, ~79 GFLOPs per 640x640 image), in
the ops ONNX Runtime's CUDA EP plugin runs (Conv, Sigmoid, Mul, Add, Concat, MaxPool, Resize,
Reshape: no Slice or Split, so C2f's split is two 1x1 convolutions and the box head has no DFL).
Input `images` [N,3,S,S] float32 (N dynamic), output `output0` [N,84,A] (A = 8400 at 640) in
YOLOv8's layout: cx, cy, w, h, then 80 class scores after a sigmoid. The class logits' bias is
-10 so that scores stay near 0: no detections, so post-processing stays as light as on a quiet
scene and the figure is the model's.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--size", type=int, default=640)
ap.add_argument("--seed", type=int, default=1)
args = ap.parse_args()
rng = np.random.default_rng(args.seed)
nodes, inits = [], []
count = [0]


def name(p):
    count[0] += 1
    return f"{p}{count[0]}"


def const(arr, p="c"):
    n = name(p)
    inits.append(numpy_helper.from_array(np.asarray(arr), n))
    return n


def conv(x, c1, c2, k=1, s=1, act=True, bias=None):
    """Conv2d (batch norm folded into the bias) + SiLU."""
    w = (rng.standard_normal((c2, c1, k, k), dtype=np.float32) / np.sqrt(c1 * k * k)).astype(np.float32)
    b = np.zeros(c2, np.float32) if bias is None else np.full(c2, bias, np.float32)
    y = name("conv")
    nodes.append(helper.make_node("Conv", [x, const(w, "w"), const(b, "b")], [y], kernel_shape=[k, k],
                                  strides=[s, s], pads=[k // 2] * 4))
    if not act:
        return y
    sg = name("sig")
    nodes.append(helper.make_node("Sigmoid", [y], [sg]))
    out = name("silu")
    nodes.append(helper.make_node("Mul", [y, sg], [out]))
    return out


def op(kind, inputs, **attrs):
    y = name(kind.lower())
    nodes.append(helper.make_node(kind, inputs, [y], **attrs))
    return y


def c2f(x, c1, c2, n, shortcut):
    c = c2 // 2
    ys = [conv(x, c1, c), conv(x, c1, c)]
    for _ in range(n):
        b = conv(conv(ys[-1], c, c, 3), c, c, 3)
        ys.append(op("Add", [ys[-1], b]) if shortcut else b)
    return conv(op("Concat", ys, axis=1), (2 + n) * c, c2)


def sppf(x, c1, c2):
    c = c1 // 2
    y = [conv(x, c1, c)]
    for _ in range(3):
        y.append(op("MaxPool", [y[-1]], kernel_shape=[5, 5], strides=[1, 1], pads=[2, 2, 2, 2]))
    return conv(op("Concat", y, axis=1), 4 * c, c2)


def up(x):
    return op("Resize", [x, const(np.zeros(0, np.float32), "roi"), const(np.array([1, 1, 2, 2], np.float32), "scales")],
              mode="nearest")


x = "images"
x = conv(x, 3, 48, 3, 2)
x = conv(x, 48, 96, 3, 2)
x = c2f(x, 96, 96, 2, True)
x = conv(x, 96, 192, 3, 2)
p3 = c2f(x, 192, 192, 4, True)
x = conv(p3, 192, 384, 3, 2)
p4 = c2f(x, 384, 384, 4, True)
x = conv(p4, 384, 576, 3, 2)
x = c2f(x, 576, 576, 2, True)
p5 = sppf(x, 576, 576)
h4 = c2f(op("Concat", [up(p5), p4], axis=1), 960, 384, 2, False)
o3 = c2f(op("Concat", [up(h4), p3], axis=1), 576, 192, 2, False)
o4 = c2f(op("Concat", [conv(o3, 192, 192, 3, 2), h4], axis=1), 576, 384, 2, False)
o5 = c2f(op("Concat", [conv(o4, 384, 384, 3, 2), p5], axis=1), 960, 576, 2, False)

shape = const(np.array([0, 84, -1], np.int64), "shape")
levels = []
for feat, c in ((o3, 192), (o4, 384), (o5, 576)):
    box = conv(conv(conv(feat, c, 64, 3), 64, 64, 3), 64, 4, 1, act=False)
    cls = conv(conv(conv(feat, c, 192, 3), 192, 192, 3), 192, 80, 1, act=False, bias=-10.0)
    det = op("Concat", [box, op("Sigmoid", [cls])], axis=1)
    levels.append(op("Reshape", [det, shape]))
nodes.append(helper.make_node("Concat", levels, ["output0"], axis=2))

s = args.size
anchors = sum((s // st) ** 2 for st in (8, 16, 32))
graph = helper.make_graph(nodes, "yolov8m_random", [helper.make_tensor_value_info("images", TensorProto.FLOAT, ["batch", 3, s, s])],
                          [helper.make_tensor_value_info("output0", TensorProto.FLOAT, ["batch", 84, anchors])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="vinfer make-yolov8m.py")
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, args.out)
params = sum(int(np.prod(i.dims)) for i in inits)
print(f"{args.out}: {len(nodes)} nodes, {params / 1e6:.1f}M parameters, input [N,3,{s},{s}], output [N,84,{anchors}]")
