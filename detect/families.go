package detect

import (
	"fmt"
	"math"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// NewDecoder returns the decoder for family f, checking the output layout (outputs as the
// session declares them) and the labels count up front.
func NewDecoder(f Family, outputs []tensor.Info, p Params) (Decoder, error) {
	var d Decoder
	var err error
	switch f {
	case FamilyYOLOX:
		d, err = newYOLOX(outputs, p)
	case FamilyFastestDet:
		d, err = newFastestDet(outputs, p)
	case FamilyUltraFace:
		d, err = newUltraFace(outputs, p)
	case FamilyYOLOv5:
		d, err = newYOLOv5(outputs, p)
	case FamilyYOLOv8:
		d, err = newYOLOv8(outputs, p)
	case FamilyNanoDet:
		d, err = newNanoDet(outputs, p)
	default:
		return nil, fmt.Errorf("detect: unknown family %q (one of %v)", f, Families)
	}
	if err != nil {
		return nil, err
	}
	if len(p.Labels) > 0 && len(p.Labels) != d.Classes() {
		return nil, fmt.Errorf("detect: the labels list %d classes but the %s model outputs %d: use the model's own labels file", len(p.Labels), f, d.Classes())
	}
	return d, nil
}

func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

// grid is one detection head's cell layout.
type grid struct{ stride, w, h int }

func grids(inW, inH int, strides []int) ([]grid, int) {
	var gs []grid
	total := 0
	for _, s := range strides {
		g := grid{stride: s, w: inW / s, h: inH / s}
		gs = append(gs, g)
		total += g.w * g.h
	}
	return gs, total
}

func dims(i tensor.Info) string { return fmt.Sprint(i.Shape) }

// --- YOLOX --------------------------------------------------------------------------------

type yolox struct {
	p     Params
	grids []grid
	rows  int
	cols  int
}

func newYOLOX(outs []tensor.Info, p Params) (Decoder, error) {
	if len(outs) != 1 || len(outs[0].Shape) != 3 {
		return nil, fmt.Errorf("detect: yolox wants one output [N,A,5+C], got %d outputs", len(outs))
	}
	gs, total := grids(p.InputWidth, p.InputHeight, []int{8, 16, 32})
	sh := outs[0].Shape
	if sh[1] != int64(total) || sh[2] < 6 {
		return nil, fmt.Errorf("detect: yolox output %s does not match input %dx%d (want [N,%d,5+C])", dims(outs[0]), p.InputWidth, p.InputHeight, total)
	}
	return &yolox{p: p, grids: gs, rows: total, cols: int(sh[2])}, nil
}

func (d *yolox) Classes() int { return d.cols - 5 }

// Decode: cx=(o0+gx)·s, cy=(o1+gy)·s, w=exp(o2)·s, h=exp(o3)·s, score = obj·cls (MANIFEST §1.1,
// Megvii YOLOX demo_postprocess).
func (d *yolox) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	data := outs[0].Data[b*d.rows*d.cols : (b+1)*d.rows*d.cols]
	start := len(dst)
	r := 0
	for _, g := range d.grids {
		s := float32(g.stride)
		for gy := 0; gy < g.h; gy++ {
			for gx := 0; gx < g.w; gx++ {
				row := data[r*d.cols : (r+1)*d.cols]
				r++
				obj := row[4]
				if obj < d.p.ScoreThreshold {
					continue
				}
				c, best := argmax(row[5:])
				score := obj * best
				if score < d.p.ScoreThreshold {
					continue
				}
				cx, cy := (row[0]+float32(gx))*s, (row[1]+float32(gy))*s
				w, h := float32(math.Exp(float64(row[2])))*s, float32(math.Exp(float64(row[3])))*s
				dst = append(dst, Detection{ClassID: c, Score: score, Box: [4]float32{cx - w/2, cy - h/2, cx + w/2, cy + h/2}})
			}
		}
	}
	return d.p.finish(dst, start, tr)
}

func argmax(v []float32) (int, float32) {
	bi, bv := 0, v[0]
	for i, x := range v[1:] {
		if x > bv {
			bi, bv = i+1, x
		}
	}
	return bi, bv
}

// --- FastestDet ---------------------------------------------------------------------------

type fastestDet struct {
	p         Params
	c, gh, gw int
}

func newFastestDet(outs []tensor.Info, p Params) (Decoder, error) {
	if len(outs) != 1 || len(outs[0].Shape) != 4 || outs[0].Shape[1] < 6 {
		return nil, fmt.Errorf("detect: fastestdet wants one output [N,5+C,H/16,W/16]")
	}
	sh := outs[0].Shape
	return &fastestDet{p: p, c: int(sh[1]), gh: int(sh[2]), gw: int(sh[3])}, nil
}

func (d *fastestDet) Classes() int { return d.c - 5 }

// Decode per cell: cx=(gx+tanh(c1))/W, cy=(gy+tanh(c2))/H (normalised), w,h = sigmoid(c3,c4)
// fractions of the input, score = obj^0.6 · cls^0.4 (dog-qiuqiu/FastestDet, MANIFEST §1.3).
func (d *fastestDet) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	plane := d.gh * d.gw
	data := outs[0].Data[b*d.c*plane : (b+1)*d.c*plane]
	start := len(dst)
	iw, ih := float32(d.p.InputWidth), float32(d.p.InputHeight)
	for gy := 0; gy < d.gh; gy++ {
		for gx := 0; gx < d.gw; gx++ {
			i := gy*d.gw + gx
			obj := data[i]
			bc, best := 0, float32(-1)
			for c := 5; c < d.c; c++ {
				if v := data[c*plane+i]; v > best {
					bc, best = c-5, v
				}
			}
			score := float32(math.Pow(float64(obj), 0.6) * math.Pow(float64(best), 0.4))
			if score < d.p.ScoreThreshold || math.IsNaN(float64(score)) {
				continue
			}
			cx := (float32(gx) + float32(math.Tanh(float64(data[plane+i])))) / float32(d.gw)
			cy := (float32(gy) + float32(math.Tanh(float64(data[2*plane+i])))) / float32(d.gh)
			w, h := sigmoid(data[3*plane+i]), sigmoid(data[4*plane+i])
			dst = append(dst, Detection{ClassID: bc, Score: score, Box: [4]float32{
				(cx - w/2) * iw, (cy - h/2) * ih, (cx + w/2) * iw, (cy + h/2) * ih}})
		}
	}
	return d.p.finish(dst, start, tr)
}

// --- UltraFace ----------------------------------------------------------------------------

type ultraFace struct {
	p               Params
	scores, boxes   int // output indices
	priors, classes int
}

func newUltraFace(outs []tensor.Info, p Params) (Decoder, error) {
	d := &ultraFace{p: p, scores: -1, boxes: -1}
	for i, o := range outs {
		if len(o.Shape) != 3 {
			continue
		}
		if o.Shape[2] == 4 && d.boxes < 0 {
			d.boxes = i
		} else if d.scores < 0 {
			d.scores = i
		}
	}
	if len(outs) != 2 || d.scores < 0 || d.boxes < 0 || outs[d.scores].Shape[1] != outs[d.boxes].Shape[1] {
		return nil, fmt.Errorf("detect: ultraface wants outputs scores [N,P,C] and boxes [N,P,4]")
	}
	d.priors, d.classes = int(outs[d.boxes].Shape[1]), int(outs[d.scores].Shape[2])
	return d, nil
}

// Classes counts the foreground classes (the background column is not a class).
func (d *ultraFace) Classes() int { return d.classes - 1 }

// Decode: boxes come decoded in the graph as corner form normalised to the input; class k ≥ 1
// of the softmax scores is foreground class k−1 (Linzaer/Ultra-Light-Fast-Generic-Face-Detector).
func (d *ultraFace) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	sc := outs[d.scores].Data[b*d.priors*d.classes : (b+1)*d.priors*d.classes]
	bx := outs[d.boxes].Data[b*d.priors*4 : (b+1)*d.priors*4]
	start := len(dst)
	iw, ih := float32(d.p.InputWidth), float32(d.p.InputHeight)
	for i := 0; i < d.priors; i++ {
		c, best := argmax(sc[i*d.classes+1 : (i+1)*d.classes])
		if best < d.p.ScoreThreshold {
			continue
		}
		q := bx[i*4 : i*4+4]
		dst = append(dst, Detection{ClassID: c, Score: best, Box: [4]float32{q[0] * iw, q[1] * ih, q[2] * iw, q[3] * ih}})
	}
	return d.p.finish(dst, start, tr)
}
