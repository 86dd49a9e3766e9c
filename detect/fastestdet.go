package detect

import (
	"fmt"
	"math"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// fastestDetKind is dog-qiuqiu/FastestDet.
//
//	outputs     one [N,5+C,⌈H/16⌉,⌈W/16⌉]
//	preprocess  BGR, /255, stretch with area resampling (INTER_AREA)
//	defaults    score 0.65, NMS IoU 0.45 (FastestDet test.py)
var fastestDetKind = Kind{
	Family: FamilyFastestDet,
	Preprocess: preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Stretch, Interp: preprocess.Area,
		Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}},
	Defaults: Params{ScoreThreshold: 0.65},
	New:      newFastestDet,
	Match: func(w, h int, outs []tensor.Info) bool {
		if len(outs) != 1 {
			return false
		}
		sh := outs[0].Shape
		return len(sh) == 4 && sh[1] > 5 && sh[2] == int64(ceilDiv(h, 16)) && sh[3] == int64(ceilDiv(w, 16))
	},
}

// fastestDet decodes FastestDet's single feature map [N,5+C,GH,GW] (stride 16, channel first).
// Per cell: objectness (sigmoid in the graph), raw x,y offsets, raw w,h, C class probabilities
// (softmax in the graph).
type fastestDet struct {
	base
	chans, gh, gw int
}

func newFastestDet(outs []tensor.Info, p Params) (Decoder, error) {
	s := 16
	if len(p.Strides) == 1 {
		s = p.Strides[0]
	} else if len(p.Strides) > 1 {
		return nil, fmt.Errorf("detect: fastestdet has one stride, not %v", p.Strides)
	}
	gh, gw := ceilDiv(p.InputHeight, s), ceilDiv(p.InputWidth, s)
	if len(outs) != 1 || !fits(outs[0].Shape, -1, -1, int64(gh), int64(gw)) || known(outs[0].Shape, 1, 0) < 6 {
		return nil, fmt.Errorf("detect: fastestdet wants one output [N,5+C,%d,%d] for a %dx%d input (stride %d); the model has %s",
			gh, gw, p.InputWidth, p.InputHeight, s, describe(outs))
	}
	d := &fastestDet{chans: int(outs[0].Shape[1]), gh: gh, gw: gw}
	return d, d.init(FamilyFastestDet, p, d.chans-5)
}

// Decode follows FastestDet's example/ncnn/FastestDet.cpp (dog-qiuqiu/FastestDet): for cell
// (gx,gy) cx = (gx + tanh(c1))/GW and cy = (gy + tanh(c2))/GH as fractions of the input,
// w = sigmoid(c3) and h = sigmoid(c4) likewise, score = obj^0.6 · cls^0.4 for the best class
// (the Python examples use obj·cls; vinfer's reference detections use the ncnn score).
// Fractions are scaled by the input size, then mapped by tr (which undoes the stretch).
func (d *fastestDet) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	plane := d.gh * d.gw
	data := item(outs, 0, b, d.chans*plane)
	if data == nil {
		return dst
	}
	thr := float64(d.p.ScoreThreshold)
	iw, ih := float32(d.p.InputWidth), float32(d.p.InputHeight)
	start := len(dst)
	for i := 0; i < plane; i++ {
		obj := data[i]
		// cls ≤ 1, so score ≤ obj^0.6: skip the cell before looking at its classes.
		if !(math.Pow(float64(obj), 0.6) > thr) {
			continue
		}
		c, p := 0, data[5*plane+i]
		for k := 6; k < d.chans; k++ {
			if v := data[k*plane+i]; v > p || p != p {
				c, p = k-5, v
			}
		}
		score := float32(math.Pow(float64(obj), 0.6) * math.Pow(float64(p), 0.4))
		if !(float64(score) > thr) {
			continue
		}
		gx, gy := float32(i%d.gw), float32(i/d.gw)
		cx := (gx + float32(math.Tanh(float64(data[plane+i])))) / float32(d.gw) * iw
		cy := (gy + float32(math.Tanh(float64(data[2*plane+i])))) / float32(d.gh) * ih
		hw, hh := sigmoid(data[3*plane+i])*iw/2, sigmoid(data[4*plane+i])*ih/2
		dst = add(dst, c, score, cx-hw, cy-hh, cx+hw, cy+hh)
	}
	return d.finish(dst, start, tr)
}
