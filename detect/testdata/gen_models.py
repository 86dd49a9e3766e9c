#!/usr/bin/python3
"""Generate tiny ONNX models with the published I/O contracts of detector exports.

Each model takes the real image input and returns fixed tensors with a few detections
planted, scaled by the mean of the input (so an all-ones image gives the planted values
exactly and an all-zeros image gives nothing). The layouts follow the exporters:

  yolov5s_640.onnx        ultralytics/yolov5 export.py: images [1,3,640,640] -> output0
                          [1,25200,85] (cx,cy,w,h px, obj, 80 class probs)
  yolov5s_640_heads.onnx  the same model cut before Detect's decoding: three raw heads
                          [1,255,80,80], [1,255,40,40], [1,255,20,20] (logits)
  yolov8n_640.onnx        ultralytics export (dynamic=True for the batch): images
                          [batch,3,640,640] -> output0 [batch,84,8400]
  nanodet-plus-m_416.onnx RangiLyu/nanodet tools/export_onnx.py: data [1,3,416,416] ->
                          output [1,3598,112] (80 sigmoid scores, 4x8 distance logits)
  nanodet-m_320.onnx      legacy NanoDet export: input.1 [1,3,320,320] -> cls_pred_stride_{8,16,32}
                          [1,A,80] and dis_pred_stride_{8,16,32} [1,A,32]
  yolov10n_640.onnx       ultralytics YOLOv10 / YOLO26 end2end export: images [1,3,640,640] ->
                          output0 [1,300,6] (x1,y1,x2,y2, score, class). Here the one-to-one
                          head's [1,84,8400] (x1,y1,x2,y2 px, 80 scores) is planted and the graph
                          holds Ultralytics' end2end postprocess (nn/modules/head.py
                          Detect.postprocess): the 300 anchors with the best class score (TopK),
                          then the 300 best (anchor, class) scores among them (TopK), each row
                          the anchor's box, the score and the class as a float. No NMS.
  picodet_s_320.onnx      PaddleDetection PP-PicoDet exported without post-processing
                          (export_post_process=False): image [1,3,320,320] -> per stride 8,16,32,
                          64 the head's maps [1,80,H/s,W/s] (class logits) and [1,32,H/s,W/s]
                          (4 sides x 8 bins) are planted, and the graph does what PicoHead does
                          for that export: sigmoid on the scores, reshape to [1,C,H*W], transpose
                          to [1,H*W,C]. Outputs: every level's scores, then every level's
                          distributions, named transpose_{2i}.tmp_0 and transpose_{2i+1}.tmp_0 as
                          Paddle names them in creation order; centres at (x+0.5)*stride

It also writes models.json: per model its family, input size and the detections the planted
values decode to (class, score, [x1,y1,x2,y2] in input pixels), for the Go tests.

Usage: /usr/bin/python3 gen_models.py OUTDIR      (needs python3-onnx and python3-numpy)
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


def logit(p):
    return math.log(p / (1 - p))


def one_hot(bins, j):
    """Distance-bin logits whose softmax expectation is bin j (to ~1e-15)."""
    v = np.full(bins, -20.0, np.float32)
    v[j] = 20.0
    return v


def save(path, inputs, outputs, dynamic_batch=False):
    """inputs: (name, [C,H,W]); outputs: list of (name, array with batch dim 1)."""
    in_name, chw = inputs
    batch = "batch" if dynamic_batch else 1
    nodes = [
        # m = mean(image) per batch item, shaped [N,1,...] to scale each planted tensor.
        helper.make_node("ReduceMean", [in_name], ["mean4"], axes=[1, 2, 3], keepdims=1),
    ]
    graph_outputs, inits = [], []
    for name, arr in outputs:
        arr = arr.astype(np.float32)
        rank = arr.ndim
        shape_name = f"{name}_mshape"
        inits.append(numpy_helper.from_array(np.array([-1] + [1] * (rank - 1), np.int64), shape_name))
        inits.append(numpy_helper.from_array(arr, f"{name}_planted"))
        nodes.append(helper.make_node("Reshape", ["mean4", shape_name], [f"{name}_m"]))
        nodes.append(helper.make_node("Mul", [f"{name}_planted", f"{name}_m"], [name]))
        graph_outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, [batch] + list(arr.shape[1:])))
    graph = helper.make_graph(
        nodes, "planted",
        [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, [batch] + list(chw))],
        graph_outputs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="vinfer gen_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def yolov5():
    out = np.zeros((1, 25200, 85), np.float32)

    def put(r, cx, cy, w, h, obj, c, p):
        out[0, r, :5] = [cx, cy, w, h, obj]
        out[0, r, 5 + c] = p
    put(1000, 320, 240, 100, 50, 0.8, 0, 0.9)   # person 0.72
    put(2000, 322, 241, 100, 50, 0.7, 0, 0.9)   # duplicate, suppressed
    put(3000, 100, 400, 60, 40, 0.9, 16, 0.95)  # dog 0.855
    put(4000, 600, 600, 10, 10, 0.9, 2, 0.2)    # below 0.25
    return out, [(16, 0.855, [70, 380, 130, 420]), (0, 0.72, [270, 215, 370, 265])]


def yolov5_heads():
    """Stride-16 head, anchor 1 (62,45), cell (10,12); see cases_test.go yolov5Raw."""
    heads = []
    for s in (8, 16, 32):
        g = 640 // s
        t = np.full((1, 3, 85, g, g), -10.0, np.float32)  # [N, anchors, channels, gy, gx]
        if s == 16:
            t[0, 1, 0:5, 12, 10] = [logit(0.75), 0, 0, logit(0.75), logit(0.9)]
            t[0, 1, 5 + 3, 12, 10] = logit(0.8)
        heads.append(t.reshape(1, 255, g, g))
    return heads, [(3, 0.72, [145, 149.375, 207, 250.625])]


def yolov8():
    out = np.zeros((1, 84, 8400), np.float32)

    def put(a, cx, cy, w, h, c, p):
        out[0, :4, a] = [cx, cy, w, h]
        out[0, 4 + c, a] = p
    put(5000, 100, 200, 40, 80, 7, 0.9)    # truck
    put(5001, 102, 202, 42, 82, 7, 0.5)    # suppressed (IoU 0.86 > 0.7)
    put(100, 500, 500, 100, 100, 0, 0.6)   # person
    return out, [(7, 0.9, [80, 160, 120, 240]), (0, 0.6, [450, 450, 550, 550])]


def nanodet_plus():
    """Stride 32 cell (4,6) of 416: centre (128,192), sides 2,1,3,4 bins of 32."""
    out = np.zeros((1, 3598, 112), np.float32)
    r = 52 * 52 + 26 * 26 + 6 * 13 + 4
    out[0, r, 0] = 0.8
    for k, j in enumerate((2, 1, 3, 4)):
        out[0, r, 80 + 8 * k:80 + 8 * (k + 1)] = one_hot(8, j)
    return out, [(0, 0.8, [64, 160, 224, 320])]


def nanodet_legacy():
    """Stride 16 cell (5,3) of 320: centre (88,56), sides 1,2,1,2 bins of 16."""
    cls, dis = [], []
    for s in (8, 16, 32):
        n = (320 // s) ** 2
        c = np.zeros((1, n, 80), np.float32)
        d = np.zeros((1, n, 32), np.float32)
        if s == 16:
            i = 3 * 20 + 5
            c[0, i, 2] = 0.7
            for k, j in enumerate((1, 2, 1, 2)):
                d[0, i, 8 * k:8 * (k + 1)] = one_hot(8, j)
        cls.append((f"cls_pred_stride_{s}", c))
        dis.append((f"dis_pred_stride_{s}", d))
    return cls + dis, [(2, 0.7, [72, 24, 104, 88])]


def save_yolov10(path, head, nc=80, max_det=300):
    """head: the one-to-one head [1,4+nc,A] (x1,y1,x2,y2 then scores), scaled by the image mean;
    the graph then runs Ultralytics' end2end top-k postprocess to output0 [1,max_det,6]."""
    anchors = head.shape[2]
    k = min(max_det, anchors)
    c = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
    inits = [
        numpy_helper.from_array(head.astype(np.float32), "head_planted"),
        c("mshape", [-1, 1, 1]), c("split", [4, nc]), c("k", [k]), c("nc", nc),
        c("rep4", [1, 1, 4]), c("repnc", [1, 1, nc]), c("flat", [1, k * nc]), c("axis2", [2]),
    ]
    n = helper.make_node
    nodes = [
        n("ReduceMean", ["images"], ["mean4"], axes=[1, 2, 3], keepdims=1),
        n("Reshape", ["mean4", "mshape"], ["m"]),
        n("Mul", ["head_planted", "m"], ["head"]),                       # [1,4+nc,A]
        n("Transpose", ["head"], ["preds"], perm=[0, 2, 1]),             # [1,A,4+nc]
        n("Split", ["preds", "split"], ["boxes", "scores"], axis=2),     # [1,A,4], [1,A,nc]
        n("ReduceMax", ["scores"], ["amax"], axes=[2], keepdims=0),      # [1,A]
        n("TopK", ["amax", "k"], ["_v1", "idx"], axis=1),                # [1,k]
        n("Unsqueeze", ["idx", "axis2"], ["idx3"]),                      # [1,k,1]
        n("Tile", ["idx3", "rep4"], ["idx4"]),
        n("Tile", ["idx3", "repnc"], ["idxnc"]),
        n("GatherElements", ["boxes", "idx4"], ["kboxes"], axis=1),      # [1,k,4]
        n("GatherElements", ["scores", "idxnc"], ["kscores"], axis=1),   # [1,k,nc]
        n("Reshape", ["kscores", "flat"], ["fscores"]),                  # [1,k*nc]
        n("TopK", ["fscores", "k"], ["best", "fidx"], axis=1),           # [1,k]
        n("Div", ["fidx", "nc"], ["anchor"]),
        n("Mod", ["fidx", "nc"], ["cls"]),
        n("Unsqueeze", ["anchor", "axis2"], ["anchor3"]),
        n("Tile", ["anchor3", "rep4"], ["anchor4"]),
        n("GatherElements", ["kboxes", "anchor4"], ["obox"], axis=1),    # [1,k,4]
        n("Unsqueeze", ["best", "axis2"], ["oscore"]),
        n("Cast", ["cls"], ["clsf"], to=TensorProto.FLOAT),
        n("Unsqueeze", ["clsf", "axis2"], ["oclass"]),
        n("Concat", ["obox", "oscore", "oclass"], ["output0"], axis=2),  # [1,k,6]
    ]
    graph = helper.make_graph(
        nodes, "yolov10-end2end",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 640, 640])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, [1, k, 6])], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="vinfer gen_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def yolov10():
    """One-to-one head: a truck at anchor 5000 (its car score 0.3 is a second row: end2end does
    no NMS), a person at anchor 100."""
    head = np.zeros((1, 84, 8400), np.float32)
    head[0, :4, 5000] = [80, 160, 120, 240]
    head[0, 4 + 7, 5000] = 0.9
    head[0, 4 + 2, 5000] = 0.3
    head[0, :4, 100] = [450, 450, 550, 550]
    head[0, 4 + 0, 100] = 0.6
    return head, [(7, 0.9, [80, 160, 120, 240]), (0, 0.6, [450, 450, 550, 550]), (2, 0.3, [80, 160, 120, 240])]


def save_picodet(path, levels):
    """levels: per stride, the head's class logits [1,C,g,g] and distribution logits [1,32,g,g]
    (scaled by the image mean); the graph applies PicoHead's export_post_process=False tail."""
    n = helper.make_node
    nodes = [n("ReduceMean", ["image"], ["mean4"], axes=[1, 2, 3], keepdims=1)]
    inits = [numpy_helper.from_array(np.array([-1, 1, 1, 1], np.int64), "mshape")]
    nodes.append(n("Reshape", ["mean4", "mshape"], ["m"]))
    cls_outs, dis_outs = [], []
    for i, (cls, dis) in enumerate(levels):
        for kind, arr, name in (("cls", cls, f"transpose_{2 * i}.tmp_0"), ("dis", dis, f"transpose_{2 * i + 1}.tmp_0")):
            p = f"{kind}{i}"
            ch, cells = arr.shape[1], arr.shape[2] * arr.shape[3]
            inits.append(numpy_helper.from_array(arr.astype(np.float32), p + "_planted"))
            inits.append(numpy_helper.from_array(np.array([1, ch, cells], np.int64), p + "_shape"))
            nodes.append(n("Mul", [p + "_planted", "m"], [p + "_m"]))
            src = p + "_m"
            if kind == "cls":
                nodes.append(n("Sigmoid", [src], [p + "_sig"]))
                src = p + "_sig"
            nodes.append(n("Reshape", [src, p + "_shape"], [p + "_flat"]))
            nodes.append(n("Transpose", [p + "_flat"], [name], perm=[0, 2, 1]))
            info = helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, cells, ch])
            (cls_outs if kind == "cls" else dis_outs).append(info)
    graph = helper.make_graph(
        nodes, "picodet-no-postprocess",
        [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 320, 320])],
        cls_outs + dis_outs, initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="vinfer gen_models.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)


def picodet():
    """Stride 16 cell (5,3) of 320: centre (88,56), sides 1,2,1,2 bins of 16 (as cases_test.go
    picoDet); stride 32 cell (2,4): centre (80,144), sides 2,1,2,3 bins of 32, a dog at 0.6.
    Logits -20 elsewhere (sigmoid ~2e-9)."""
    levels = []
    for s in (8, 16, 32, 64):
        g = -(-320 // s)
        c = np.full((1, 80, g, g), -20.0, np.float32)
        d = np.zeros((1, 32, g, g), np.float32)
        for gs, gx, gy, cls, p, sides in ((16, 5, 3, 2, 0.7, (1, 2, 1, 2)), (32, 2, 4, 16, 0.6, (2, 1, 2, 3))):
            if s == gs:
                c[0, cls, gy, gx] = logit(p)
                for k, j in enumerate(sides):
                    d[0, 8 * k:8 * (k + 1), gy, gx] = one_hot(8, j)
        levels.append((c, d))
    return levels, [(2, 0.7, [72, 24, 104, 88]), (16, 0.6, [16, 112, 144, 240])]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen_models.py OUTDIR")
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    index = []

    def add(file, family, inp, outputs, want, dynamic_batch=False):
        save(os.path.join(outdir, file), inp, outputs, dynamic_batch)
        index.append({
            "file": file, "family": family, "width": inp[1][2], "height": inp[1][1],
            "outputs": [name for name, _ in outputs], "dynamic_batch": dynamic_batch,
            "want": [{"class_id": c, "score": s, "box": b} for c, s, b in want],
        })

    out, want = yolov5()
    add("yolov5s_640.onnx", "yolov5", ("images", [3, 640, 640]), [("output0", out)], want)
    heads, want = yolov5_heads()
    add("yolov5s_640_heads.onnx", "yolov5", ("images", [3, 640, 640]),
        [(f"head_p{i + 3}", h) for i, h in enumerate(heads)], want)
    out, want = yolov8()
    add("yolov8n_640.onnx", "yolov8", ("images", [3, 640, 640]), [("output0", out)], want, dynamic_batch=True)
    out, want = nanodet_plus()
    add("nanodet-plus-m_416.onnx", "nanodet", ("data", [3, 416, 416]), [("output", out)], want)
    outs, want = nanodet_legacy()
    add("nanodet-m_320.onnx", "nanodet", ("input.1", [3, 320, 320]), outs, want)

    head, want = yolov10()
    save_yolov10(os.path.join(outdir, "yolov10n_640.onnx"), head)
    index.append({"file": "yolov10n_640.onnx", "family": "end2end", "width": 640, "height": 640,
                  "outputs": ["output0"], "dynamic_batch": False,
                  "want": [{"class_id": c, "score": s, "box": b} for c, s, b in want]})
    levels, want = picodet()
    save_picodet(os.path.join(outdir, "picodet_s_320.onnx"), levels)
    index.append({"file": "picodet_s_320.onnx", "family": "picodet", "width": 320, "height": 320,
                  "outputs": [f"transpose_{k}.tmp_0" for k in (0, 2, 4, 6, 1, 3, 5, 7)], "dynamic_batch": False,
                  "want": [{"class_id": c, "score": s, "box": b} for c, s, b in want]})

    with open(os.path.join(outdir, "models.json"), "w") as f:
        json.dump(index, f, indent=1)


if __name__ == "__main__":
    main()
