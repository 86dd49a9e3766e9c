package preprocess_test

import (
	"errors"
	"testing"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
)

// pattern is a w×h BGR24 frame whose pixel (x,y) is (x, y, 7).
func pattern(w, h int) *frame.Frame {
	f := &frame.Frame{Format: frame.FormatBGR24, Width: w, Height: h, Device: -1}
	f.Planes[0], f.Strides[0] = make([]byte, 3*w*h), 3*w
	for y := range h {
		for x := range w {
			copy(f.Planes[0][y*3*w+3*x:], []byte{byte(x), byte(y), 7})
		}
	}
	return f
}

// TestRectify: an axis-aligned quadrilateral gives the crop itself; a quadrilateral turned by
// 90° gives the crop turned; a degenerate one is refused; corners outside the frame take its
// edge pixels.
func TestRectify(t *testing.T) {
	f := pattern(64, 48)
	var dst frame.Frame
	if err := preprocess.Rectify(&dst, f, [4][2]float32{{10, 5}, {30, 5}, {30, 15}, {10, 15}}, 20, 10); err != nil {
		t.Fatal(err)
	}
	for _, p := range [][2]int{{0, 0}, {19, 9}, {7, 3}} {
		got := dst.Planes[0][p[1]*dst.Strides[0]+3*p[0]:][:3]
		if int(got[0]) != 10+p[0] || int(got[1]) != 5+p[1] || got[2] != 7 {
			t.Errorf("pixel %v is %v, want %d,%d,7", p, got, 10+p[0], 5+p[1])
		}
	}
	// Top left at (30,5), clockwise: dst x runs down the frame, dst y runs left.
	if err := preprocess.Rectify(&dst, f, [4][2]float32{{30, 5}, {30, 25}, {20, 25}, {20, 5}}, 20, 10); err != nil {
		t.Fatal(err)
	}
	if got := dst.Planes[0][:3]; got[0] != 29 || got[1] != 5 {
		t.Errorf("turned pixel (0,0) is %v, want 29,5", got)
	}
	if err := preprocess.Rectify(&dst, f, [4][2]float32{{0, 0}, {10, 10}, {20, 20}, {30, 30}}, 20, 10); !errors.Is(err, preprocess.ErrQuad) {
		t.Errorf("collinear corners: %v, want ErrQuad", err)
	}
	if err := preprocess.Rectify(&dst, f, [4][2]float32{{-100, -100}, {200, -100}, {200, 200}, {-100, 200}}, 8, 8); err != nil {
		t.Fatal(err)
	}
	if got := dst.Planes[0][:3]; got[0] != 0 || got[1] != 0 {
		t.Errorf("outside pixel is %v, want the corner 0,0", got)
	}
}
