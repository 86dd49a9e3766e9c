package detect

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// nanoDetKind is RangiLyu/nanodet: NanoDet-Plus, and legacy NanoDet recognised by its output
// names.
//
//	outputs     one [N,A,C+32], A = Σ_s ⌈H/s⌉·⌈W/s⌉ for s = 8,16,32,64 (NanoDet-Plus, reg_max
//	            7), or cls_pred_stride_s [N,A_s,C] + dis_pred_stride_s [N,A_s,4(R+1)] (legacy)
//	preprocess  BGR, stretch, mean 103.53,116.28,123.675, std 57.375,57.12,58.395
//	defaults    score 0.35, NMS IoU 0.6, at most 100 (demo threshold, head NMS settings),
//	            reg_max 7
var nanoDetKind = Kind{
	Family: FamilyNanoDet,
	Preprocess: preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Stretch, Scale: 1,
		Mean: [3]float32{103.53, 116.28, 123.675}, Std: [3]float32{57.375, 57.12, 58.395}},
	Defaults: Params{ScoreThreshold: 0.35, NMSIoU: 0.6, MaxDetections: 100, RegMax: 7},
	New:      newNanoDet,
	Match: func(w, h int, outs []tensor.Info) bool {
		a, k, ok := oneOutput3(outs)
		return ok && a == int64(cellCount(w, h, []int{8, 16, 32, 64})) && k > 32
	},
	Named: isNanoDetLegacy,
}

// isNanoDetLegacy reports outputs named cls_pred_stride_*, legacy NanoDet's export.
func isNanoDetLegacy(outs []tensor.Info) bool {
	return slices.ContainsFunc(outs, func(o tensor.Info) bool { return strings.HasPrefix(o.Name, "cls_pred_stride_") })
}

// nanoDet decodes NanoDet's Generalized-Focal-Loss heads: per cell, C class scores (sigmoid in
// the graph) and for each box side a distribution over R+1 distance bins of one stride each.
// Two published layouts:
//
//   - NanoDet-Plus (RangiLyu/nanodet nanodet/model/head/nanodet_plus_head.py _forward_onnx,
//     exported by tools/export_onnx.py as "output"): one [N,A,C+4(R+1)] output, the levels of
//     strides 8,16,32,64 one after the other, row-major; centre priors at (x·s, y·s)
//     (get_single_level_center_priors; demo_ncnn/nanodet.cpp disPred2Bbox: ct_x = x * stride).
//   - Legacy NanoDet (nanodet_head.py before Plus; tools/export_onnx.py names the outputs
//     cls_pred_stride_s [N,A_s,C] and dis_pred_stride_s [N,A_s,4(R+1)]); centre priors at
//     ((x+½)·s, (y+½)·s) (gfl_head.py get_single_level_center_point; the 2020 demo_ncnn
//     disPred2Bbox: ct_x = (x + 0.5) * stride). Some conversions apply the distribution's
//     expectation in the graph, leaving dis_pred_stride_s [N,A_s,4] in bins; that is accepted.
type nanoDet struct {
	base
	levels  []nanoLevel
	classes int
	bins    int     // R+1, or 1 when the expectation is in the graph
	offset  float32 // centre prior offset in cells: 0 (Plus) or 0.5 (legacy)
}

// nanoLevel is one stride's rows: in output cls (C scores from column clsCol of rows clsStride
// apart) and output dis (4·bins values from column disCol of rows disStride apart), starting at
// row first of each batch item of itemRows rows.
type nanoLevel struct {
	grid
	cls, dis                     int
	clsItem, disItem             int // values per batch item
	first                        int
	clsStride, clsCol, disStride int
	disCol                       int
}

func newNanoDet(outs []tensor.Info, p Params) (Decoder, error) {
	d := &nanoDet{bins: p.RegMax + 1}
	var err error
	if isNanoDetLegacy(outs) {
		err = d.legacy(outs, p)
	} else {
		err = d.plus(outs, p)
	}
	if err != nil {
		return nil, err
	}
	return d, d.init(FamilyNanoDet, p, d.classes)
}

func (d *nanoDet) plus(outs []tensor.Info, p Params) error {
	strides := p.Strides
	if strides == nil {
		strides = []int{8, 16, 32, 64}
	}
	gs, rows := grids(p.InputWidth, p.InputHeight, strides)
	want := 4 * d.bins
	if len(outs) != 1 || !fits(outs[0].Shape, -1, int64(rows), -1) || known(outs[0].Shape, 2, 0) <= want {
		return fmt.Errorf("detect: nanodet-plus wants one output [N,%d,C+%d] for a %dx%d input with strides %v and reg_max %d (or legacy cls_pred_stride_*/dis_pred_stride_* outputs); the model has %s",
			rows, want, p.InputWidth, p.InputHeight, strides, p.RegMax, describe(outs))
	}
	cols := int(outs[0].Shape[2])
	d.classes = cols - want
	first := 0
	for _, g := range gs {
		d.levels = append(d.levels, nanoLevel{grid: g, clsItem: rows * cols, disItem: rows * cols, first: first,
			clsStride: cols, disStride: cols, disCol: d.classes})
		first += g.w * g.h
	}
	return nil
}

func (d *nanoDet) legacy(outs []tensor.Info, p Params) error {
	d.offset = 0.5
	strides := p.Strides
	if strides == nil {
		for _, o := range outs {
			if v, ok := strings.CutPrefix(o.Name, "cls_pred_stride_"); ok {
				s, err := strconv.Atoi(v)
				if err != nil || s <= 0 || s > 1<<10 {
					return fmt.Errorf("detect: nanodet output %q does not name a stride", o.Name)
				}
				strides = append(strides, s)
			}
		}
		slices.Sort(strides)
	}
	for _, s := range strides {
		ci := slices.IndexFunc(outs, func(o tensor.Info) bool { return o.Name == "cls_pred_stride_"+strconv.Itoa(s) })
		di := slices.IndexFunc(outs, func(o tensor.Info) bool { return o.Name == "dis_pred_stride_"+strconv.Itoa(s) })
		if ci < 0 || di < 0 {
			return fmt.Errorf("detect: nanodet wants outputs cls_pred_stride_%d and dis_pred_stride_%d; the model has %s", s, s, describe(outs))
		}
		c, ds := outs[ci].Shape, outs[di].Shape
		g := grid{stride: s, w: ceilDiv(p.InputWidth, s), h: ceilDiv(p.InputHeight, s)}
		if n := known(c, 1, 0); n != g.w*g.h && n == (p.InputWidth/s)*(p.InputHeight/s) {
			g.w, g.h = p.InputWidth/s, p.InputHeight/s // the 2020 demo's floor(input/stride)
		}
		cells := int64(g.w * g.h)
		dis := known(ds, 2, 0)
		if dis == 4 {
			d.bins = 1
		}
		if !fits(c, -1, cells, -1) || !fits(ds, -1, cells, int64(4*d.bins)) || known(c, 2, 0) < 1 {
			return fmt.Errorf("detect: nanodet stride %d wants cls_pred_stride_%d [N,%d,C] and dis_pred_stride_%d [N,%d,%d] (a %dx%d input, reg_max %d); the model has %s",
				s, s, cells, s, cells, 4*(p.RegMax+1), p.InputWidth, p.InputHeight, p.RegMax, describe(outs))
		}
		if d.classes == 0 {
			d.classes = int(c[2])
		} else if int(c[2]) != d.classes {
			return fmt.Errorf("detect: nanodet outputs disagree on the class count (%d and %d): %s", d.classes, c[2], describe(outs))
		}
		d.levels = append(d.levels, nanoLevel{grid: g, cls: ci, dis: di, clsItem: int(cells) * d.classes, disItem: int(cells) * 4 * d.bins,
			clsStride: d.classes, disStride: 4 * d.bins})
	}
	if d.bins == 1 {
		for _, l := range d.levels {
			if known(outs[l.dis].Shape, 2, 0) != 4 {
				return fmt.Errorf("detect: nanodet dis_pred outputs mix distributions and distances: %s", describe(outs))
			}
		}
	}
	return nil
}

// Decode: for cell (gx,gy) of stride s with centre (cx,cy) = ((gx+o)·s, (gy+o)·s), each side's
// distance is s·Σ_i i·softmax(bins)_i (distribution_project); box = (cx−l, cy−t, cx+r, cy+b)
// (distance2bbox); score = the best class score.
func (d *nanoDet) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	thr := d.p.ScoreThreshold
	start := len(dst)
	for li := range d.levels {
		l := &d.levels[li]
		cls := item(outs, l.cls, b, l.clsItem)
		dis := item(outs, l.dis, b, l.disItem)
		if cls == nil || dis == nil {
			return dst[:start]
		}
		cls, dis = cls[l.first*l.clsStride:], dis[l.first*l.disStride:]
		s := float32(l.stride)
		for i := 0; i < l.w*l.h; i++ {
			c, p := best(cls[i*l.clsStride+l.clsCol:i*l.clsStride+l.clsCol+d.classes], thr)
			if c < 0 {
				continue
			}
			cx := (float32(i%l.w) + d.offset) * s
			cy := (float32(i/l.w) + d.offset) * s
			q := dis[i*l.disStride+l.disCol : i*l.disStride+l.disCol+4*d.bins]
			var side [4]float32
			for k := range side {
				if d.bins == 1 {
					side[k] = q[k] * s
				} else {
					side[k] = expectation(q[k*d.bins:(k+1)*d.bins]) * s
				}
			}
			dst = add(dst, c, p, cx-side[0], cy-side[1], cx+side[2], cy+side[3])
		}
	}
	return d.finish(dst, start, tr)
}

// expectation returns Σ_i i·softmax(logits)_i, the distance a distribution predicts in bins.
func expectation(logits []float32) float32 {
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
