package attr_test

import (
	"errors"
	"testing"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/tensor"
)

// onehot builds a [1,T,C] output whose step t is class steps[t] with probability p.
func onehot(steps []int, c int, p float32) []tensor.Tensor {
	d := make([]float32, len(steps)*c)
	for t, k := range steps {
		for j := range c {
			d[t*c+j] = (1 - p) / float32(c-1)
		}
		d[t*c+k] = p
	}
	return []tensor.Tensor{{Info: tensor.Info{Shape: []int64{1, int64(len(steps)), int64(c)}}, Data: d}}
}

// TestCTC: repeats merge, a blank separates two equal symbols, the last class is a space.
func TestCTC(t *testing.T) {
	dict := []string{"A", "B", "1"}
	info := []tensor.Info{{Name: "y", Shape: []int64{-1, -1, 5}}}
	dec, err := attr.New(attr.KindOCR, info, dict)
	if err != nil {
		t.Fatal(err)
	}
	var v attr.Value
	// A A blank A B B space 1 blank
	if !dec.Decode(onehot([]int{1, 1, 0, 1, 2, 2, 4, 3, 0}, 5, 0.9), 0, &v) {
		t.Fatal("no read")
	}
	if v.Text != "AAB 1" || v.Score < 0.89 || v.Score > 0.91 {
		t.Fatalf("read %q %.3f, want \"AAB 1\" 0.9", v.Text, v.Score)
	}
	if dec.Decode(onehot([]int{1}, 5, 0.9), 1, &v) {
		t.Fatal("item 1 of a batch of 1 decoded")
	}
	if _, err := attr.New(attr.KindOCR, info, []string{"A"}); !errors.Is(err, attr.ErrDictionary) {
		t.Fatalf("a 1-symbol dictionary for 5 classes: %v", err)
	}
}

// TestClassifySoftmax: raw scores go through softmax; the best label wins.
func TestClassifySoftmax(t *testing.T) {
	dec, err := attr.New(attr.KindClassify, []tensor.Info{{Shape: []int64{1, 3}}}, []string{"red", "green", "blue"})
	if err != nil {
		t.Fatal(err)
	}
	var v attr.Value
	out := []tensor.Tensor{{Info: tensor.Info{Shape: []int64{1, 3}}, Data: []float32{0, 2, 0}}}
	if !dec.Decode(out, 0, &v) || v.Label != "green" || v.Score < 0.78 || v.Score > 0.79 {
		t.Fatalf("got %+v, want green 0.787", v)
	}
}
