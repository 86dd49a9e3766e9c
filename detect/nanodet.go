package detect

import (
	"fmt"
	"math"
	"strings"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// nanoDet decodes NanoDet-Plus per-stride heads: for stride s the cell (gx,gy) has its centre
// prior at (gx·s, gy·s) (nanodet-plus get_single_level_center_priors: no half-cell offset); each
// side's distance is the expected value of a softmax over R+1 bins, times s; the box is
// (cx−l, cy−t, cx+r, cy+b) (distance2bbox).
type nanoDet struct {
	p       Params
	levels  []nanoLevel
	classes int
	bins    int
	prob    []float32 // scratch: one side's softmax
}

type nanoLevel struct {
	cls, dis int // output indices
	grid
}

func newNanoDet(outs []tensor.Info, p Params) (Decoder, error) {
	if p.RegMax <= 0 {
		p.RegMax = 7
	}
	d := &nanoDet{p: p, bins: p.RegMax + 1, prob: make([]float32, p.RegMax+1)}
	for _, s := range []int{8, 16, 32} {
		ci, di := -1, -1
		for i, o := range outs {
			switch o.Name {
			case fmt.Sprintf("cls_pred_stride_%d", s):
				ci = i
			case fmt.Sprintf("dis_pred_stride_%d", s):
				di = i
			}
		}
		if ci < 0 || di < 0 {
			return nil, fmt.Errorf("detect: nanodet wants outputs cls_pred_stride_%d and dis_pred_stride_%d", s, s)
		}
		c, ds := outs[ci].Shape, outs[di].Shape
		gw := (p.InputWidth + s - 1) / s
		gh := (p.InputHeight + s - 1) / s
		if len(c) != 3 || len(ds) != 3 || c[1] != int64(gw*gh) || ds[1] != c[1] || ds[2] != int64(4*d.bins) {
			return nil, fmt.Errorf("detect: nanodet stride %d outputs %v and %v do not match input %dx%d with reg_max %d (want [N,%d,C] and [N,%d,%d])",
				s, c, ds, p.InputWidth, p.InputHeight, p.RegMax, gw*gh, gw*gh, 4*d.bins)
		}
		if d.classes == 0 {
			d.classes = int(c[2])
		}
		d.levels = append(d.levels, nanoLevel{cls: ci, dis: di, grid: grid{stride: s, w: gw, h: gh}})
	}
	return d, nil
}

func (d *nanoDet) Classes() int { return d.classes }

func (d *nanoDet) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	start := len(dst)
	for _, l := range d.levels {
		n := l.w * l.h
		cls := outs[l.cls].Data[b*n*d.classes : (b+1)*n*d.classes]
		dis := outs[l.dis].Data[b*n*4*d.bins : (b+1)*n*4*d.bins]
		s := float32(l.stride)
		for i := 0; i < n; i++ {
			c, best := argmax(cls[i*d.classes : (i+1)*d.classes])
			if best < d.p.ScoreThreshold {
				continue
			}
			cx, cy := float32(i%l.w)*s, float32(i/l.w)*s
			var side [4]float32
			for k := 0; k < 4; k++ {
				side[k] = d.expect(dis[(i*4+k)*d.bins:(i*4+k+1)*d.bins]) * s
			}
			dst = append(dst, Detection{ClassID: c, Score: best,
				Box: [4]float32{cx - side[0], cy - side[1], cx + side[2], cy + side[3]}})
		}
	}
	return d.p.finish(dst, start, tr)
}

// expect returns Σ i·softmax(logits)_i.
func (d *nanoDet) expect(logits []float32) float32 {
	m := logits[0]
	for _, v := range logits[1:] {
		m = max(m, v)
	}
	var sum, acc float32
	for i, v := range logits {
		e := float32(math.Exp(float64(v - m)))
		sum += e
		acc += e * float32(i)
	}
	return acc / sum
}

// DetectFamily infers the family from the outputs' names and shapes, for an input of
// inputW×inputH pixels. Ambiguous or unknown layouts give an error listing the outputs.
func DetectFamily(inputW, inputH int, outputs []tensor.Info) (Family, error) {
	_, cells := grids(inputW, inputH, []int{8, 16, 32})
	for _, o := range outputs {
		if strings.HasPrefix(o.Name, "cls_pred_stride_") {
			return FamilyNanoDet, nil
		}
	}
	switch len(outputs) {
	case 1:
		sh := outputs[0].Shape
		switch {
		case len(sh) == 4 && sh[1] > 5 && sh[2] == int64(inputH/16) && sh[3] == int64(inputW/16):
			return FamilyFastestDet, nil
		case len(sh) == 3 && sh[1] == int64(cells) && sh[2] > 5:
			return FamilyYOLOX, nil
		case len(sh) == 3 && sh[1] == int64(3*cells) && sh[2] > 5:
			return FamilyYOLOv5, nil
		case len(sh) == 3 && sh[2] == int64(cells) && sh[1] > 4 && sh[1] < sh[2]:
			return FamilyYOLOv8, nil
		}
	case 2:
		a, b := outputs[0].Shape, outputs[1].Shape
		if len(a) == 3 && len(b) == 3 && a[1] == b[1] && (a[2] == 4) != (b[2] == 4) {
			return FamilyUltraFace, nil
		}
	}
	var desc []string
	for _, o := range outputs {
		desc = append(desc, fmt.Sprintf("%s %v", o.Name, o.Shape))
	}
	return "", fmt.Errorf("detect: cannot tell the model family from its outputs (%s) for a %dx%d input: set family: (one of %v) in the model config",
		strings.Join(desc, ", "), inputW, inputH, Families)
}
