#!/usr/bin/env python3
"""Compares two `vinfer run --jsonl` files of the same clip (FP32 then FP16): per frame, each
FP32 detection is matched greedily to the FP16 detection of the same class with the highest
IoU. Prints one JSON line: boxes, matched at IoU >= 0.9 with |score difference| <= 0.02, the
share, and the counts per class in each file.

usage: compare_dets.py FP32.jsonl FP16.jsonl
"""
import collections
import json
import sys


def load(path):
    frames = {}
    for line in open(path):
        r = json.loads(line)
        if "detections" not in r or "frame" not in r:
            continue
        frames[(r.get("source"), r["frame"])] = r["detections"] or []
    return frames


def iou(a, b):
    x1, y1, x2, y2 = max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3])
    inter = max(0.0, x2 - x1) * max(0.0, y2 - y1)
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / u if u > 0 else 0.0


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    boxes = matched = 0
    worst_score = 0.0
    ca, cb = collections.Counter(), collections.Counter()
    for k, da in a.items():
        db = list(b.get(k, []))
        for d in da:
            ca[d["label"]] += 1
        for d in db:
            cb[d["label"]] += 1
        for d in da:
            boxes += 1
            best, bi = 0.0, -1
            for i, e in enumerate(db):
                if e["label"] == d["label"]:
                    v = iou(d["box"], e["box"])
                    if v > best:
                        best, bi = v, i
            if bi >= 0 and best >= 0.9:
                ds = abs(d["score"] - db[bi]["score"])
                worst_score = max(worst_score, ds)
                if ds <= 0.02:
                    matched += 1
                db.pop(bi)
    print(json.dumps({"frames_fp32": len(a), "frames_fp16": len(b), "boxes_fp32": boxes, "matched": matched,
                      "share": round(matched / boxes, 4) if boxes else None, "worst_score_diff_matched": round(worst_score, 4),
                      "counts_fp32": dict(ca), "counts_fp16": dict(cb), "same_counts": ca == cb}))


if __name__ == "__main__":
    main()
