package detect

import (
	"fmt"
	"math"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// yolov5Kind is Ultralytics YOLOv5.
//
//	outputs     one [N,3A,5+C], A = Σ_s ⌈H/s⌉·⌈W/s⌉ for s = 8,16,32 (three anchors per cell),
//	            or the three raw Detect heads [N,3(5+C),H/s,W/s] / [N,3,H/s,W/s,5+C]
//	preprocess  RGB, /255, letterbox centred with pad 114
//	defaults    score 0.25, NMS IoU 0.45 (detect.py), the COCO anchors of yolov5s.yaml
var yolov5Kind = Kind{
	Family: FamilyYOLOv5,
	Preprocess: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center,
		Pad: 114, Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}},
	Defaults: Params{Anchors: cocoAnchors},
	New:      newYOLOv5,
	Match: func(w, h int, outs []tensor.Info) bool {
		if len(outs) == 3 {
			_, err := yolov5Heads(outs, w, h, []int{8, 16, 32}, cocoAnchors)
			return err == nil
		}
		a, k, ok := oneOutput3(outs)
		return ok && a == 3*int64(cellCount(w, h, []int{8, 16, 32})) && k > 5
	},
}

// yolov5 decodes Ultralytics YOLOv5 exports. The usual export has one output [N,A,5+C]
// (A = 3·Σ cells, "output0") whose rows are cx,cy,w,h in input pixels, objectness and C class
// probabilities, the Detect layer's decoding and sigmoids inside the graph. Exports cut before
// the Detect layer's decoding (common for NPUs) have one raw head per stride instead, handled
// by heads.
type yolov5 struct {
	base
	rows, cols int
	heads      []v5head // raw heads, when there are several outputs
	logitThr   float32  // ScoreThreshold as a logit: σ(x) > t ⇔ x > logit(t)
}

// v5head is one raw YOLOv5 Detect head: logits for na anchors × gh×gw cells × no channels.
type v5head struct {
	out int // output index
	grid
	na, no     int
	aS, cS, kS int // element steps between anchors, cells, channels
	anchors    []float32
}

func newYOLOv5(outs []tensor.Info, p Params) (Decoder, error) {
	d := &yolov5{}
	if len(outs) > 1 {
		strides := p.Strides
		if strides == nil {
			strides = []int{8, 16, 32}
		}
		heads, err := yolov5Heads(outs, p.InputWidth, p.InputHeight, strides, p.Anchors)
		if err != nil {
			return nil, err
		}
		d.heads = heads
		d.cols = heads[0].no
		t := float64(p.ScoreThreshold)
		d.logitThr = float32(math.Log(t / (1 - t)))
		return d, d.init(FamilyYOLOv5, p, d.cols-5)
	}
	if len(outs) != 1 || len(outs[0].Shape) != 3 || known(outs[0].Shape, 2, 0) < 6 {
		return nil, fmt.Errorf("detect: yolov5 wants one output [N,A,5+C] (or three raw heads); the model has %s", describe(outs))
	}
	_, cells := grids(p.InputWidth, p.InputHeight, []int{8, 16, 32})
	d.rows, d.cols = known(outs[0].Shape, 1, 3*cells), int(outs[0].Shape[2])
	return d, d.init(FamilyYOLOv5, p, d.cols-5)
}

// yolov5Heads matches raw head outputs, [N,na·no,gh,gw] or [N,na,gh,gw,no] in any order, to the
// strides by their grid size (⌈H/s⌉×⌈W/s⌉); anchors[i] belongs to the i-th smallest stride.
func yolov5Heads(outs []tensor.Info, w, h int, strides []int, anchors [][]float32) ([]v5head, error) {
	fail := func(why string) error {
		return fmt.Errorf("detect: yolov5 raw heads: %s; want one [N,na·(5+C),H/s,W/s] or [N,na,H/s,W/s,5+C] output per stride %v (input %dx%d); the model has %s",
			why, strides, w, h, describe(outs))
	}
	if len(outs) != len(strides) {
		return nil, fail(fmt.Sprintf("%d outputs for %d strides", len(outs), len(strides)))
	}
	if len(anchors) < len(strides) {
		return nil, fail(fmt.Sprintf("%d anchor sets for %d strides", len(anchors), len(strides)))
	}
	order := make([]int, len(strides)) // order[i]: rank of strides[i] by size
	for i, s := range strides {
		for _, t := range strides {
			if t < s {
				order[i]++
			}
		}
	}
	heads := make([]v5head, len(strides))
	used := make([]bool, len(strides))
	for oi, o := range outs {
		sh := o.Shape
		if len(sh) != 4 && len(sh) != 5 {
			return nil, fail(fmt.Sprintf("output %s is %d-D", o.Name, len(sh)))
		}
		for _, v := range sh[1:] {
			if v <= 0 {
				return nil, fail(fmt.Sprintf("output %s has dynamic dimensions", o.Name))
			}
		}
		gh, gw := int(sh[2]), int(sh[3])
		li := -1
		for i, s := range strides {
			if !used[i] && ceilDiv(h, s) == gh && ceilDiv(w, s) == gw {
				li = i
				break
			}
		}
		if li < 0 {
			return nil, fail(fmt.Sprintf("output %s's %dx%d grid fits no stride", o.Name, gw, gh))
		}
		used[li] = true
		a := anchors[order[li]]
		hd := v5head{out: oi, grid: grid{stride: strides[li], w: gw, h: gh}, na: len(a) / 2, anchors: a}
		plane := gw * gh
		if len(sh) == 5 {
			if int(sh[1]) != hd.na {
				return nil, fail(fmt.Sprintf("output %s has %d anchors, the anchors %v have %d", o.Name, sh[1], a, hd.na))
			}
			hd.no = int(sh[4])
			hd.aS, hd.cS, hd.kS = plane*hd.no, hd.no, 1
		} else {
			if int(sh[1])%hd.na != 0 {
				return nil, fail(fmt.Sprintf("output %s's %d channels are not a multiple of its %d anchors", o.Name, sh[1], hd.na))
			}
			hd.no = int(sh[1]) / hd.na
			hd.aS, hd.cS, hd.kS = hd.no*plane, 1, plane
		}
		if hd.no < 6 {
			return nil, fail(fmt.Sprintf("output %s has %d values per anchor", o.Name, hd.no))
		}
		heads[li] = hd
	}
	for i := range heads {
		if heads[i].no != heads[0].no {
			return nil, fail("the heads disagree on the class count")
		}
	}
	return heads, nil
}

// Decode reads the decoded output as Ultralytics' non_max_suppression does (utils/general.py):
// score = objectness · class probability, for the best class; box = cx,cy,w,h.
func (d *yolov5) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	if d.heads != nil {
		return d.decodeHeads(outs, b, tr, dst)
	}
	rows := d.rows
	if len(outs) > 0 {
		rows = known(outs[0].Shape, 1, rows) // a dynamic row count is known at run time
	}
	data := item(outs, 0, b, rows*d.cols)
	if data == nil {
		return dst
	}
	thr := d.p.ScoreThreshold
	start := len(dst)
	for r := 0; r < rows; r++ {
		row := data[r*d.cols : (r+1)*d.cols]
		if !(row[4] > thr) {
			continue
		}
		c, p := best(row[5:], thr/row[4]) // score = obj·p > thr
		if c < 0 {
			continue
		}
		score := row[4] * p
		if !(score > thr) { // rounding at the edge
			continue
		}
		hw, hh := row[2]/2, row[3]/2
		dst = add(dst, c, score, row[0]-hw, row[1]-hh, row[0]+hw, row[1]+hh)
	}
	return d.finish(dst, start, tr)
}

// decodeHeads applies the Detect layer (ultralytics/yolov5 models/yolo.py, v6.0 and later) to
// the logits: for anchor (aw,ah) at cell (gx,gy) of stride s, cx = (2σ(tx) − 0.5 + gx)·s,
// cy likewise, w = (2σ(tw))²·aw, h = (2σ(th))²·ah; score = σ(obj)·σ(best class logit).
func (d *yolov5) decodeHeads(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	thr := d.p.ScoreThreshold
	start := len(dst)
	for hi := range d.heads {
		hd := &d.heads[hi]
		data := item(outs, hd.out, b, hd.na*hd.no*hd.w*hd.h)
		if data == nil {
			return dst[:start]
		}
		s := float32(hd.stride)
		for a := 0; a < hd.na; a++ {
			aw, ah := hd.anchors[2*a], hd.anchors[2*a+1]
			for i := 0; i < hd.w*hd.h; i++ {
				at := data[a*hd.aS+i*hd.cS:]
				if !(at[4*hd.kS] > d.logitThr) {
					continue
				}
				obj := sigmoid(at[4*hd.kS])
				q := thr / obj // the class probability must exceed q
				if !(q < 1) {
					continue
				}
				c, top := -1, float32(math.Inf(-1))
				if q > 0 {
					top = float32(math.Log(float64(q) / (1 - float64(q))))
				}
				for k := 5; k < hd.no; k++ {
					if v := at[k*hd.kS]; v > top {
						c, top = k-5, v
					}
				}
				if c < 0 {
					continue
				}
				score := obj * sigmoid(top)
				if !(score > thr) { // rounding at the edge
					continue
				}
				gx, gy := float32(i%hd.w), float32(i/hd.w)
				cx := (2*sigmoid(at[0]) - 0.5 + gx) * s
				cy := (2*sigmoid(at[hd.kS]) - 0.5 + gy) * s
				tw, th := 2*sigmoid(at[2*hd.kS]), 2*sigmoid(at[3*hd.kS])
				hw, hh := tw*tw*aw/2, th*th*ah/2
				dst = add(dst, c, score, cx-hw, cy-hh, cx+hw, cy+hh)
			}
		}
	}
	return d.finish(dst, start, tr)
}
