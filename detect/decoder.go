package detect

import (
	"fmt"
	"math"
	"slices"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// Decoder turns a model's outputs into detections. A Decoder keeps scratch space: use one per
// goroutine.
type Decoder interface {
	// Decode appends the detections of batch item b to dst and returns it: candidates above
	// the score threshold, NMS, at most MaxDetections, highest score first, boxes mapped to
	// source pixels by tr (a zero Transform leaves them in model-input pixels). outputs are
	// the session's outputs in the order given to NewDecoder, dimension 0 the batch. Outputs
	// too short for item b (or a negative b) give no detections.
	Decode(outputs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection
	// Classes is the model's class count.
	Classes() int
}

// NewDecoder returns the decoder of family f for a model with the given outputs (names and
// shapes as the session declares them; dynamic dimensions -1): the registered Kind's New with
// p's zero fields filled from DefaultParams. It checks the layout against the outputs, the
// input size and strides in p, and the labels count, and says what does not fit.
func NewDecoder(f Family, outputs []tensor.Info, p Params) (Decoder, error) {
	k := lookup(f)
	if k == nil {
		return nil, fmt.Errorf("detect: unknown model family %q: use one of %s", f, familyList())
	}
	p, err := p.resolve(f)
	if err != nil {
		return nil, err
	}
	d, err := k.New(outputs, p)
	if err != nil {
		return nil, err // New may return a half-built decoder with its error
	}
	return d, nil
}

// base is what every decoder shares: resolved parameters, class names, the final stage.
type base struct {
	family Family
	p      Params
	labels []string
	// keepAll: the model ran its own NMS, so finish only sorts and caps the candidates.
	keepAll bool
}

func (d *base) init(f Family, p Params, classes int) error {
	if classes < 1 {
		return fmt.Errorf("detect: the %s model outputs no classes", f)
	}
	labels, err := p.names(f, classes)
	if err != nil {
		return err
	}
	d.family, d.p, d.labels = f, p, labels
	return nil
}

func (d *base) Classes() int { return len(d.labels) }

// add appends a candidate box in model-input pixels unless it or its score is not finite or
// the box is inside out.
func add(dst []Detection, class int, score float32, x1, y1, x2, y2 float32) []Detection {
	if !(x2 >= x1 && y2 >= y1) || !finite(x1) || !finite(y1) || !finite(x2) || !finite(y2) || !finite(score) {
		return dst
	}
	return append(dst, Detection{ClassID: class, Score: score, Box: [4]float32{x1, y1, x2, y2}})
}

// finish runs NMS on the candidates dst[start:], keeps at most MaxDetections, maps the boxes to
// source pixels, drops those left with no area (wholly in the letterbox padding or outside the
// frame) and names the classes.
func (d *base) finish(dst []Detection, start int, tr preprocess.Transform) []Detection {
	var kept []Detection
	if d.keepAll {
		kept = dst[start:]
		slices.SortStableFunc(kept, byScore)
		kept = kept[:min(len(kept), d.p.MaxDetections)]
	} else {
		kept = nms(dst[start:], d.p.NMSIoU, !d.p.ClassAgnosticNMS, d.p.MaxDetections)
	}
	identity := tr.ScaleX == 0 || tr.ScaleY == 0
	n := start
	for _, k := range kept {
		if !identity {
			k.Box = tr.ToSource(k.Box)
			if !(k.Box[2] > k.Box[0] && k.Box[3] > k.Box[1]) {
				continue
			}
			if k.HasCorners() {
				for i, c := range k.Corners {
					b := tr.ToSource([4]float32{c[0], c[1], c[0], c[1]})
					k.Corners[i] = [2]float32{b[0], b[1]}
				}
			}
		}
		k.Label = d.labels[k.ClassID]
		dst[n] = k
		n++
	}
	return dst[:n]
}

// item returns batch item b of outs[i], n values per item, or nil when outs is too short.
func item(outs []tensor.Tensor, i, b, n int) []float32 {
	if i < 0 || i >= len(outs) || b < 0 || n <= 0 {
		return nil
	}
	data := outs[i].Data
	if len(data)/n <= b {
		return nil
	}
	return data[b*n : (b+1)*n]
}

// fits reports whether shape has the wanted dimensions: a wanted -1 matches anything, a
// declared -1 (dynamic) matches any wanted size.
func fits(shape []int64, want ...int64) bool {
	if len(shape) != len(want) {
		return false
	}
	for i, w := range want {
		if w >= 0 && shape[i] >= 0 && shape[i] != w {
			return false
		}
	}
	return true
}

// known returns shape[i] when it is fixed (positive, below 2³¹), else def.
func known(shape []int64, i int, def int) int {
	if i < len(shape) && shape[i] > 0 && shape[i] < 1<<31 {
		return int(shape[i])
	}
	return def
}

func finite(v float32) bool { return v-v == 0 }

func sigmoid(x float32) float32 { return 1 / (1 + float32(math.Exp(float64(-x)))) }

func exp(x float32) float32 { return float32(math.Exp(float64(x))) }

// best returns the index and value of v's largest element above floor (the first one on ties),
// or -1 when none is above it; NaN never is. Rows of scores are mostly below the threshold, so
// the comparison is almost always false and the loop runs without branch misses.
func best(v []float32, floor float32) (int, float32) {
	bi, bv := -1, floor
	for i, x := range v {
		if x > bv {
			bi, bv = i, x
		}
	}
	return bi, bv
}

// grid is one feature map of a multi-stride head.
type grid struct{ stride, w, h int }

// grids lays out the feature maps of an input for the strides, ⌈size/stride⌉ cells each side.
func grids(w, h int, strides []int) ([]grid, int) {
	gs := make([]grid, len(strides))
	total := 0
	for i, s := range strides {
		gs[i] = grid{stride: s, w: ceilDiv(w, s), h: ceilDiv(h, s)}
		total += gs[i].w * gs[i].h
	}
	return gs, total
}
