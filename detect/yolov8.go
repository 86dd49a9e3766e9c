package detect

import (
	"fmt"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// yolov8Kind is Ultralytics YOLOv8 and YOLO11 (same layout).
//
//	outputs     one [N,4+C,A], A = Σ_s ⌈H/s⌉·⌈W/s⌉ for s = 8,16,32 (anchors last)
//	preprocess  RGB, /255, letterbox centred with pad 114
//	defaults    score 0.25, NMS IoU 0.7 (ultralytics cfg/default.yaml)
var yolov8Kind = Kind{
	Family:  FamilyYOLOv8,
	Aliases: []string{"yolo11", "yolov11"},
	Preprocess: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center,
		Pad: 114, Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}},
	Defaults: Params{NMSIoU: 0.7},
	New:      newYOLOv8,
	Match: func(w, h int, outs []tensor.Info) bool {
		a, k, ok := oneOutput3(outs)
		return ok && k == int64(cellCount(w, h, []int{8, 16, 32})) && a > 4
	},
}

// yolov8 decodes Ultralytics YOLOv8 / YOLO11 detection exports: one output [N,4+C,A]
// ("output0", [1,84,8400] at 640×640), anchor a's values in column a: cx,cy,w,h in input
// pixels, then C class scores (sigmoid applied, no objectness).
type yolov8 struct {
	base
	feats, anchors int
	best           []float32 // scratch: per anchor, best class score so far
	bestc          []int32   // and its class
}

func newYOLOv8(outs []tensor.Info, p Params) (Decoder, error) {
	if len(outs) != 1 || len(outs[0].Shape) != 3 || known(outs[0].Shape, 1, 0) < 5 {
		return nil, fmt.Errorf("detect: yolov8 wants one output [N,4+C,A] (segmentation and pose models are not supported); the model has %s", describe(outs))
	}
	_, cells := grids(p.InputWidth, p.InputHeight, []int{8, 16, 32})
	d := &yolov8{feats: int(outs[0].Shape[1]), anchors: known(outs[0].Shape, 2, cells)}
	if d.anchors > 0 && d.feats >= d.anchors {
		// Anchors run along the last axis and outnumber the 4+C features in every published
		// export; the other way round is the [N,A,5+C] layout of YOLOX or YOLOv5.
		return nil, fmt.Errorf("detect: yolov8 wants [N,4+C,A] with the anchors last; %s has more rows than anchors, like [N,A,5+C]: try family yolox or yolov5", describe(outs))
	}
	d.best = make([]float32, d.anchors)
	d.bestc = make([]int32, d.anchors)
	return d, d.init(FamilyYOLOv8, p, d.feats-4)
}

// Decode reads the output as Ultralytics' non_max_suppression (utils/ops.py) does: score = the
// best class score, box = cx,cy,w,h. The class maximum runs row by row over the transposed
// layout, so memory is read in order.
func (d *yolov8) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	n := d.anchors
	if len(outs) > 0 {
		n = known(outs[0].Shape, 2, n) // a dynamic anchor count is known at run time
	}
	data := item(outs, 0, b, d.feats*n)
	if data == nil {
		return dst
	}
	if n > len(d.best) {
		d.best, d.bestc = make([]float32, n), make([]int32, n)
	}
	// Per anchor, the best class scoring above the threshold: starting from the threshold,
	// the comparison is almost always false.
	top, topc := d.best[:n], d.bestc[:n]
	thr := d.p.ScoreThreshold
	for a := range top {
		top[a], topc[a] = thr, -1
	}
	for c := 0; c < d.feats-4; c++ {
		row := data[(4+c)*n : (5+c)*n]
		for a, v := range row {
			if v > top[a] {
				top[a], topc[a] = v, int32(c)
			}
		}
	}
	start := len(dst)
	for a, score := range top {
		if topc[a] < 0 {
			continue
		}
		cx, cy := data[a], data[n+a]
		hw, hh := data[2*n+a]/2, data[3*n+a]/2
		dst = add(dst, int(topc[a]), score, cx-hw, cy-hh, cx+hw, cy+hh)
	}
	return d.finish(dst, start, tr)
}
