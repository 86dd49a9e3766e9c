package detect

import (
	"fmt"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// yoloxKind is Megvii YOLOX (Megvii-BaseDetection/YOLOX ONNX export).
//
//	outputs     one [N,A,5+C], A = Σ_s ⌈H/s⌉·⌈W/s⌉ for s = 8,16,32
//	preprocess  BGR, raw 0–255, letterbox top-left with pad 114 (demo preproc)
//	defaults    score 0.3, NMS IoU 0.45 (YOLOX demo; vinfer's verified references)
var yoloxKind = Kind{
	Family: FamilyYOLOX,
	Preprocess: preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Letterbox, Align: preprocess.TopLeft,
		Pad: 114, Scale: 1, Std: [3]float32{1, 1, 1}},
	Defaults: Params{ScoreThreshold: 0.3},
	New:      newYOLOX,
	Match: func(w, h int, outs []tensor.Info) bool {
		a, k, ok := oneOutput3(outs)
		return ok && a == int64(cellCount(w, h, []int{8, 16, 32})) && k > 5
	},
}

// yolox decodes Megvii YOLOX's single output [N,A,5+C]: the feature maps of strides 8,16,32 one
// after the other, each row-major (y outer). A row is the raw x,y offset in cells, the raw log
// width and height, objectness and C class probabilities (both already through a sigmoid).
type yolox struct {
	base
	grids []grid
	rows  int
	cols  int
}

func newYOLOX(outs []tensor.Info, p Params) (Decoder, error) {
	strides := p.Strides
	if strides == nil {
		strides = []int{8, 16, 32}
	}
	gs, rows := grids(p.InputWidth, p.InputHeight, strides)
	if len(outs) != 1 || !fits(outs[0].Shape, -1, int64(rows), -1) || known(outs[0].Shape, 2, 0) < 6 {
		return nil, fmt.Errorf("detect: yolox wants one output [N,%d,5+C] for a %dx%d input with strides %v; the model has %s",
			rows, p.InputWidth, p.InputHeight, strides, describe(outs))
	}
	d := &yolox{grids: gs, rows: rows, cols: int(outs[0].Shape[2])}
	return d, d.init(FamilyYOLOX, p, d.cols-5)
}

// Decode follows YOLOX's demo_postprocess (Megvii-BaseDetection/YOLOX yolox/utils/demo_utils.py)
// for cell (gx,gy) of stride s: cx = (o0+gx)·s, cy = (o1+gy)·s, w = e^o2·s, h = e^o3·s, and
// score = objectness · best class probability.
func (d *yolox) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	data := item(outs, 0, b, d.rows*d.cols)
	if data == nil {
		return dst
	}
	thr := d.p.ScoreThreshold
	start := len(dst)
	r := 0
	for _, g := range d.grids {
		s := float32(g.stride)
		for gy := 0; gy < g.h; gy++ {
			for gx := 0; gx < g.w; gx++ {
				row := data[r*d.cols : (r+1)*d.cols]
				r++
				obj := row[4]
				if !(obj > thr) { // class probabilities are at most 1
					continue
				}
				c, p := best(row[5:], thr/obj) // score = obj·p > thr
				if c < 0 {
					continue
				}
				score := obj * p
				if !(score > thr) { // rounding at the edge
					continue
				}
				cx, cy := (row[0]+float32(gx))*s, (row[1]+float32(gy))*s
				hw, hh := exp(row[2])*s/2, exp(row[3])*s/2
				dst = add(dst, c, score, cx-hw, cy-hh, cx+hw, cy+hh)
			}
		}
	}
	return d.finish(dst, start, tr)
}
