package detect

import (
	"fmt"
	"math"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// endToEndKind is a detector with its NMS (or an NMS-free one-to-one head) inside the graph:
// Ultralytics YOLOv10 and YOLO26 exports (end2end), and YOLOv8/YOLO11 exported with nms=True.
//
//	outputs     one [N,K,6]: K ≤ 10,000 rows of x1,y1,x2,y2 (input pixels), score, class
//	            (a float holding the class index); rows past the detections score 0
//	preprocess  RGB, /255, letterbox centred with pad 114 (as yolov8)
//	defaults    score 0.25, at most 300 (ultralytics cfg/default.yaml, max_det); no NMS here
//	            unless class_agnostic_nms asks for one across classes
var endToEndKind = Kind{
	Family:  FamilyEndToEnd,
	Aliases: []string{"yolov10", "yolo26", "e2e", "nms"},
	Preprocess: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center,
		Pad: 114, Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}},
	Defaults: Params{MaxDetections: 300},
	New:      newEndToEnd,
	Match: func(w, h int, outs []tensor.Info) bool {
		k, f, ok := oneOutput3(outs)
		if !ok || f != 6 || k == 0 || k < -1 || k > maxEndToEndRows {
			return false
		}
		// A one-class YOLOX or YOLOv5 output is [N,A,6] too, A its anchor count.
		cells := int64(cellCount(w, h, []int{8, 16, 32}))
		return w == 0 || (k != cells && k != 3*cells)
	},
	SizeFree: true,
}

// maxEndToEndRows bounds K: published exports keep 300 (max_det).
const maxEndToEndRows = 10000

// endToEnd decodes [N,K,6] rows x1,y1,x2,y2,score,class: the boxes are final, so Decode only
// thresholds, checks and maps them (Ultralytics' end2end postprocess is a top-k, not an NMS).
type endToEnd struct {
	base
	rows int // K when fixed; 0: read from the tensor
}

func newEndToEnd(outs []tensor.Info, p Params) (Decoder, error) {
	if len(outs) != 1 || !fits(outs[0].Shape, -1, -1, 6) || known(outs[0].Shape, 1, 1) > maxEndToEndRows {
		return nil, fmt.Errorf("detect: end2end wants one output [N,K,6] of x1,y1,x2,y2,score,class rows (K ≤ %d, as YOLOv10/YOLO26 export); the model has %s",
			maxEndToEndRows, describe(outs))
	}
	d := &endToEnd{rows: known(outs[0].Shape, 1, 0)}
	classes := len(p.Labels)
	if classes == 0 {
		classes = len(COCO80())
	}
	d.keepAll = !p.ClassAgnosticNMS
	return d, d.init(FamilyEndToEnd, p, classes)
}

// Decode keeps the rows scoring above the threshold whose class is a whole number below
// the class count (others are dropped: a class index the labels cannot name is no detection).
func (d *endToEnd) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	k := d.rows
	if k == 0 && len(outs) > 0 {
		k = known(outs[0].Shape, 1, 0)
	}
	data := item(outs, 0, b, 6*min(k, maxEndToEndRows))
	if data == nil {
		return dst
	}
	thr := d.p.ScoreThreshold
	classes := float32(len(d.labels))
	start := len(dst)
	for r := 0; r+6 <= len(data); r += 6 {
		row := data[r : r+6]
		score, cls := row[4], row[5]
		if !(score > thr) {
			continue
		}
		c := float32(math.Round(float64(cls)))
		if !(c >= 0 && c < classes) || math.Abs(float64(cls-c)) > 0.01 {
			continue
		}
		dst = add(dst, int(c), score, row[0], row[1], row[2], row[3])
	}
	return d.finish(dst, start, tr)
}
