package attr

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/vinfer/vinfer/tensor"
)

// Errors of New, wrapped with the shapes at fault.
var (
	ErrShape      = errors.New("attr: the model's outputs do not fit its kind")
	ErrDictionary = errors.New("attr: the dictionary does not match the model's classes")
)

// Decoder turns one batch item's outputs into an attribute.
type Decoder interface {
	// Decode fills v (Kind, Text, Label, ClassID, Score, Vector) from batch item b of outputs
	// (the session's outputs, dimension 0 the batch); false when the outputs are too short
	// for item b.
	Decode(outputs []tensor.Tensor, b int, v *Value) bool
}

// New returns the decoder of kind k for a model with these outputs (names and shapes as the
// session declares them, dynamic dimensions -1). labels are the OCR dictionary (one symbol a
// line, in class order from 1; class 0 is the CTC blank, and a last class beyond the
// dictionary is a space) or the classify labels. Errors wrap ErrShape or ErrDictionary and
// name the shapes.
func New(k Kind, outputs []tensor.Info, labels []string) (Decoder, error) {
	if len(outputs) != 1 {
		return nil, fmt.Errorf("%w: a %s model has one output, this one %s", ErrShape, k, describe(outputs))
	}
	o := outputs[0]
	switch k {
	case KindOCR:
		if len(o.Shape) != 3 || o.Shape[2] <= 0 {
			return nil, fmt.Errorf("%w: an ocr model outputs [N,T,C] (T steps, C classes fixed), this one %s", ErrShape, describe(outputs))
		}
		c := int(o.Shape[2])
		if c != len(labels)+1 && c != len(labels)+2 {
			return nil, fmt.Errorf("%w: %d symbols, but the output %s has %d classes (blank + symbols [+ space] = %d or %d)",
				ErrDictionary, len(labels), describe(outputs), c, len(labels)+1, len(labels)+2)
		}
		syms := make([]string, c)
		copy(syms[1:], labels)
		if c == len(labels)+2 {
			syms[c-1] = " "
		}
		return &ocr{classes: c, symbols: syms}, nil
	case KindEmbedding:
		d := int64(-1)
		switch {
		case len(o.Shape) == 2:
			d = o.Shape[1]
		case len(o.Shape) == 4 && o.Shape[2] == 1 && o.Shape[3] == 1:
			d = o.Shape[1]
		}
		if d <= 0 {
			return nil, fmt.Errorf("%w: an embedding model outputs [N,D] or [N,D,1,1] with D fixed, this one %s", ErrShape, describe(outputs))
		}
		return &embedding{dim: int(d)}, nil
	case KindClassify:
		if len(o.Shape) != 2 || o.Shape[1] <= 0 {
			return nil, fmt.Errorf("%w: a classify model outputs [N,K] with K fixed, this one %s", ErrShape, describe(outputs))
		}
		if int(o.Shape[1]) != len(labels) {
			return nil, fmt.Errorf("%w: %d labels, but the output %s has %d classes", ErrDictionary, len(labels), describe(outputs), o.Shape[1])
		}
		return &classify{labels: labels}, nil
	}
	return nil, fmt.Errorf("attr: kind %q has no attribute decoder", k)
}

func describe(infos []tensor.Info) string {
	if len(infos) == 0 {
		return "(none)"
	}
	s := make([]string, len(infos))
	for i, o := range infos {
		s[i] = fmt.Sprintf("%s %v", o.Name, o.Shape)
	}
	return strings.Join(s, ", ")
}

// item returns batch item b's values of an output whose items hold n values each; nil when the
// output is too short.
func item(t tensor.Tensor, b, n int) []float32 {
	if b < 0 || n <= 0 || len(t.Data) < (b+1)*n {
		return nil
	}
	return t.Data[b*n : (b+1)*n]
}

// perItem is the values per batch item of a run's output (its shape as run, dim 0 the batch).
func perItem(t tensor.Tensor) int {
	n := 1
	for _, d := range t.Shape[min(1, len(t.Shape)):] {
		if d < 0 {
			return 0
		}
		n *= int(d)
	}
	return n
}

// probs makes row a probability distribution in place: softmax unless it already is one
// (values in 0…1 summing to 1 within 1e-3).
func probs(row []float32) {
	sum, ok := float32(0), true
	hi := float32(math.Inf(-1))
	for _, v := range row {
		sum += v
		hi = max(hi, v)
		if v < 0 || v > 1 {
			ok = false
		}
	}
	if ok && math.Abs(float64(sum-1)) < 1e-3 {
		return
	}
	sum = 0
	for i, v := range row {
		e := float32(math.Exp(float64(v - hi)))
		row[i] = e
		sum += e
	}
	for i := range row {
		row[i] /= sum
	}
}

type ocr struct {
	classes int
	symbols []string // by class; "" for the blank
	buf     []byte
	row     []float32
}

// Decode is greedy CTC: the best class per step; a class repeated on consecutive steps counts
// once; blanks separate repeats and are dropped.
func (d *ocr) Decode(outs []tensor.Tensor, b int, v *Value) bool {
	if len(outs) != 1 {
		return false
	}
	per := perItem(outs[0])
	x := item(outs[0], b, per)
	if x == nil || per%d.classes != 0 {
		return false
	}
	d.buf = d.buf[:0]
	d.row = append(d.row[:0], make([]float32, d.classes)...)
	prev, sum, n := 0, float32(0), 0
	for t := 0; t < per/d.classes; t++ {
		copy(d.row, x[t*d.classes:(t+1)*d.classes])
		probs(d.row)
		best := 0
		for c := 1; c < d.classes; c++ {
			if d.row[c] > d.row[best] {
				best = c
			}
		}
		if best != 0 && best != prev {
			d.buf = append(d.buf, d.symbols[best]...)
			sum += d.row[best]
			n++
		}
		prev = best
	}
	v.Kind, v.Text, v.Score = KindOCR, string(d.buf), 0
	if n > 0 {
		v.Score = sum / float32(n)
	}
	return true
}

type embedding struct{ dim int }

func (d *embedding) Decode(outs []tensor.Tensor, b int, v *Value) bool {
	if len(outs) != 1 {
		return false
	}
	x := item(outs[0], b, d.dim)
	if x == nil {
		return false
	}
	var ss float64
	for _, f := range x {
		ss += float64(f) * float64(f)
	}
	inv := float32(0)
	if ss > 0 {
		inv = float32(1 / math.Sqrt(ss))
	}
	v.Vector = v.Vector[:0]
	for _, f := range x {
		v.Vector = append(v.Vector, f*inv)
	}
	v.Kind, v.Score = KindEmbedding, 1
	return true
}

type classify struct {
	labels []string
	row    []float32
}

func (d *classify) Decode(outs []tensor.Tensor, b int, v *Value) bool {
	if len(outs) != 1 {
		return false
	}
	x := item(outs[0], b, len(d.labels))
	if x == nil {
		return false
	}
	d.row = append(d.row[:0], x...)
	probs(d.row)
	best := 0
	for c := range d.row {
		if d.row[c] > d.row[best] {
			best = c
		}
	}
	v.Kind, v.ClassID, v.Label, v.Score = KindClassify, best, d.labels[best], d.row[best]
	return true
}
