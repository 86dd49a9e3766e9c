#!/usr/bin/python3
"""Generate OpenCV reference outputs for the preprocess and imageio tests.

Run from the repository root (needs Debian's python3-opencv and the ffmpeg CLI; the tests
only read what this writes, they never need OpenCV):

    apt-get install -y python3-opencv
    /usr/bin/python3 preprocess/testdata/gen_reference.py

Inputs are small crops of the shared assets, so the data stays small (about 200 KB):
  bgr_128x72.bin   cv2.imread("assets/images/dog.jpg")[150:222, 120:248], packed BGR
  i420_128x72.bin  frame 600 of assets/videos/one-by-one-person-detection.mp4 cropped by
                   ffmpeg to 128x72 at (320,160), yuv420p planes as decoded (no conversion)
Each case resizes an input the way the reference models' OpenCV code does and stores the
8-bit BGR canvas (H×W×3, before any normalisation). reference.json lists the cases.
For package imageio, imageio/testdata/jpeg_*.bin hold 48×48 crops of cv2.imread of each
asset image and jpeg_reference.json their positions and each image's per-channel mean, so Go's
JPEG decoding can be compared with libjpeg's.
"""
import json
import os
import subprocess

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
ASSETS = os.path.join(ROOT, "assets")
IMAGEIO = os.path.join(ROOT, "imageio", "testdata")


def save(name, arr, where=HERE):
    np.ascontiguousarray(arr, dtype=np.uint8).tofile(os.path.join(where, name))
    return name


def letterbox(img, size, pad=114):
    """YOLOX's preproc: top-left letterbox, r = min(H/h, W/w), int() truncation."""
    canvas = np.full((size[0], size[1], 3), pad, dtype=np.uint8)
    r = min(size[0] / img.shape[0], size[1] / img.shape[1])
    resized = cv2.resize(img, (int(img.shape[1] * r), int(img.shape[0] * r)), interpolation=cv2.INTER_LINEAR)
    canvas[: resized.shape[0], : resized.shape[1]] = resized
    return canvas


def main():
    cases = []
    bgr = cv2.imread(os.path.join(ASSETS, "images", "dog.jpg"))[150:222, 120:248]
    assert bgr.shape == (72, 128, 3)
    bgr_in = save("bgr_128x72.bin", bgr)

    raw = subprocess.run(
        ["ffmpeg", "-v", "error", "-i", os.path.join(ASSETS, "videos", "one-by-one-person-detection.mp4"),
         "-vf", r"select=eq(n\,600),crop=128:72:320:160", "-frames:v", "1",
         "-pix_fmt", "yuv420p", "-f", "rawvideo", "-"],
        check=True, capture_output=True).stdout
    assert len(raw) == 128 * 72 * 3 // 2, len(raw)
    i420_in = save("i420_128x72.bin", np.frombuffer(raw, dtype=np.uint8))
    from_i420 = cv2.cvtColor(np.frombuffer(raw, dtype=np.uint8).reshape(108, 128), cv2.COLOR_YUV2BGR_I420)

    def case(name, src, fmt, spec, out):
        cases.append({"name": name, "input": src, "format": fmt, "width": 128, "height": 72,
                      "spec": spec, "output": save(name + ".bin", out)})

    lb = {"width": 72, "height": 72, "resize": "letterbox", "interp": "bilinear", "pad": 114}
    case("bgr_letterbox_bilinear", bgr_in, "bgr24", lb, letterbox(bgr, (72, 72)))
    case("bgr_area_56x56", bgr_in, "bgr24",
         {"width": 56, "height": 56, "resize": "stretch", "interp": "area"},
         cv2.resize(bgr, (56, 56), interpolation=cv2.INTER_AREA))
    case("bgr_bilinear_up_176x99", bgr_in, "bgr24",
         {"width": 176, "height": 99, "resize": "stretch", "interp": "bilinear"},
         cv2.resize(bgr, (176, 99), interpolation=cv2.INTER_LINEAR))
    case("bgr_area_mixed_64x100", bgr_in, "bgr24",
         {"width": 64, "height": 100, "resize": "stretch", "interp": "area"},
         cv2.resize(bgr, (64, 100), interpolation=cv2.INTER_AREA))
    case("bgr_bilinear_half_64x36", bgr_in, "bgr24",
         {"width": 64, "height": 36, "resize": "stretch", "interp": "bilinear"},
         cv2.resize(bgr, (64, 36), interpolation=cv2.INTER_LINEAR))
    case("bgr_area_int_64x24", bgr_in, "bgr24",
         {"width": 64, "height": 24, "resize": "stretch", "interp": "area"},
         cv2.resize(bgr, (64, 24), interpolation=cv2.INTER_AREA))
    case("bgr_bilinear_down_100x41", bgr_in, "bgr24",
         {"width": 100, "height": 41, "resize": "stretch", "interp": "bilinear"},
         cv2.resize(bgr, (100, 41), interpolation=cv2.INTER_LINEAR))
    case("i420_to_bgr", i420_in, "i420",
         {"width": 128, "height": 72, "resize": "stretch", "interp": "bilinear"}, from_i420)
    case("i420_letterbox_bilinear", i420_in, "i420", lb, letterbox(from_i420, (72, 72)))
    case("i420_area_56x56", i420_in, "i420",
         {"width": 56, "height": 56, "resize": "stretch", "interp": "area"},
         cv2.resize(from_i420, (56, 56), interpolation=cv2.INTER_AREA))

    os.makedirs(IMAGEIO, exist_ok=True)
    jpegs = []
    for name in sorted(os.listdir(os.path.join(ASSETS, "images"))):
        img = cv2.imread(os.path.join(ASSETS, "images", name))
        h, w = img.shape[:2]
        x, y = (w // 2) // 16 * 16 + 5, (h // 2) // 16 * 16 + 3  # off the 16×16 MCU grid
        jpegs.append({"image": name, "width": w, "height": h, "crop": [x, y, 48, 48],
                      "output": save("jpeg_" + os.path.splitext(name)[0] + ".bin", img[y:y + 48, x:x + 48], IMAGEIO),
                      "mean_bgr": [float(m) for m in img.reshape(-1, 3).mean(axis=0)]})

    with open(os.path.join(HERE, "reference.json"), "w") as f:
        json.dump({"opencv": cv2.__version__, "resize": cases}, f, indent=1)
        f.write("\n")
    with open(os.path.join(IMAGEIO, "jpeg_reference.json"), "w") as f:
        json.dump({"opencv": cv2.__version__, "jpeg": jpegs}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
