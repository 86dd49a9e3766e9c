package model

import "github.com/vinfer/vinfer/preprocess"

// preset is a model family's published preprocessing, used for every field the model config
// leaves unset (thresholds and labels come from detect.DefaultParams).
type preset struct {
	pre preprocess.Spec // Width/Height come from the model
}

// presets per family. Sources: ../shared/assets/MANIFEST.md for the three bundled models
// (YOLOX: BGR 0–255, top-left letterbox pad 114; FastestDet: BGR /255 stretch with INTER_AREA;
// UltraFace: RGB (x−127)/128 stretch); Ultralytics YOLOv5/v8 (RGB /255, centred letterbox pad
// 114); NanoDet-Plus (BGR, stretch, mean [103.53,116.28,123.675], std [57.375,57.12,58.395]).
var presets = map[string]preset{
	"yolox": {pre: preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Letterbox, Align: preprocess.TopLeft,
		Pad: 114, Scale: 1, Std: [3]float32{1, 1, 1}}},
	"fastestdet": {pre: preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Stretch, Interp: preprocess.Area,
		Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}}},
	"ultraface": {pre: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Stretch,
		Scale: 1, Mean: [3]float32{127, 127, 127}, Std: [3]float32{128, 128, 128}}},
	"yolov5": {pre: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center,
		Pad: 114, Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}}},
	"yolov8": {pre: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center,
		Pad: 114, Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}}},
	"nanodet": {pre: preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Stretch, Scale: 1,
		Mean: [3]float32{103.53, 116.28, 123.675}, Std: [3]float32{57.375, 57.12, 58.395}}},
}
