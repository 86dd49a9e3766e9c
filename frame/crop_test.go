package frame

import "testing"

func TestCropInto(t *testing.T) {
	w, h := 8, 6
	f := &Frame{Format: FormatI420, Width: w, Height: h, Device: -1,
		Planes:  [3][]byte{make([]byte, w*h), make([]byte, w/2*h/2), make([]byte, w/2*h/2)},
		Strides: [3]int{w, w / 2, w / 2}}
	for i := range f.Planes[0] {
		f.Planes[0][i] = byte(i)
	}
	var c Frame
	x, y, ok := f.CropInto(&c, 3, 1, 4, 10)
	if !ok || x != 2 || y != 0 || c.Width != 5 || c.Height != 6 {
		t.Fatalf("crop at %d,%d %dx%d ok=%v", x, y, c.Width, c.Height, ok)
	}
	if c.Planes[0][0] != 2 || c.Planes[0][c.Strides[0]] != byte(w+2) {
		t.Fatalf("luma view wrong: %d %d", c.Planes[0][0], c.Planes[0][c.Strides[0]])
	}
	if _, _, ok := f.CropInto(&c, 9, 0, 3, 3); ok {
		t.Fatal("crop outside the frame accepted")
	}
}
