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

// TestCropDeviceInto: a crop of an NV12 device picture offsets both planes by the even-aligned
// corner, clips to the picture, keeps the pitches, and refuses host frames.
func TestCropDeviceInto(t *testing.T) {
	f := &Frame{Format: FormatNV12, Width: 640, Height: 360, Device: 0, Strides: [3]int{768, 768}}
	f.DevicePlanes[0], f.DevicePlanes[1] = 1<<20, 1<<24
	var v Frame
	x, y, ok := f.CropDeviceInto(&v, 101, 51, 1000, 40)
	if !ok || x != 100 || y != 50 || v.Width != 540 || v.Height != 41 {
		t.Fatalf("crop at %d,%d %dx%d ok %v; want 100,50 540x41 (the rounding widens it)", x, y, v.Width, v.Height, ok)
	}
	if v.DevicePlanes[0] != 1<<20+50*768+100 || v.DevicePlanes[1] != 1<<24+25*768+100 || v.Strides != f.Strides || v.Device != 0 {
		t.Fatalf("planes %#x %#x strides %v", v.DevicePlanes[0], v.DevicePlanes[1], v.Strides)
	}
	h := &Frame{Format: FormatNV12, Width: 64, Height: 64, Device: -1}
	if _, _, ok := h.CropDeviceInto(&v, 0, 0, 8, 8); ok {
		t.Fatal("a host frame was cropped as a device one")
	}
}
