package api

import (
	"bytes"
	"image"
	"image/color"
	"image/jpeg"
	"testing"

	"github.com/vinfer/vinfer/frame"
)

// planar builds a w×h frame of one format whose every pixel is (y, u, v) — or the three bytes
// of a packed pixel — with strides padded past the width.
func planar(f frame.PixelFormat, w, h int, a, b, c uint8, full bool) *frame.Frame {
	fr := &frame.Frame{Format: f, Width: w, Height: h, Device: -1, FullRange: full}
	fill := func(p, stride, rows int, vals ...uint8) {
		buf := make([]byte, stride*rows)
		for i := range buf {
			buf[i] = vals[(i%stride)%len(vals)]
		}
		fr.Planes[p], fr.Strides[p] = buf, stride
	}
	cw, ch := (w+1)/2, (h+1)/2
	switch f {
	case frame.FormatI420:
		fill(0, w+7, h, a)
		fill(1, cw+5, ch, b)
		fill(2, cw+3, ch, c)
	case frame.FormatNV12:
		fill(0, w+7, h, a)
		fill(1, 2*cw+4, ch, b, c)
	case frame.FormatBGR24, frame.FormatRGB24:
		fill(0, 3*w+9, h, a, b, c)
	}
	return fr
}

func TestToRGBA(t *testing.T) {
	for _, tc := range []struct {
		name    string
		f       *frame.Frame
		r, g, b uint8
	}{
		{"i420 limited black", planar(frame.FormatI420, 5, 3, 16, 128, 128, false), 0, 0, 0},
		{"i420 limited white", planar(frame.FormatI420, 5, 3, 235, 128, 128, false), 255, 255, 255},
		{"i420 limited gray", planar(frame.FormatI420, 5, 3, 126, 128, 128, false), 128, 128, 128},
		// BT.601 limited-range red and blue (Y, Cb, Cr) within rounding.
		{"i420 limited red", planar(frame.FormatI420, 4, 4, 81, 90, 240, false), 255, 0, 0},
		{"nv12 limited blue", planar(frame.FormatNV12, 7, 5, 41, 240, 110, false), 0, 0, 255},
		{"bgr", planar(frame.FormatBGR24, 3, 2, 10, 20, 30, false), 30, 20, 10},
		{"rgb", planar(frame.FormatRGB24, 3, 2, 10, 20, 30, false), 10, 20, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := toRGBA(tc.f, nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			for y := 0; y < tc.f.Height; y++ {
				for x := 0; x < tc.f.Width; x++ {
					p := img.RGBAAt(x, y)
					if absDiff(p.R, tc.r) > 1 || absDiff(p.G, tc.g) > 1 || absDiff(p.B, tc.b) > 1 || p.A != 255 {
						t.Fatalf("pixel (%d,%d) = %v, want (%d,%d,%d)", x, y, p, tc.r, tc.g, tc.b)
					}
				}
			}
		})
	}
}

// TestFullRangeMatchesStdlib: full-range YCbCr converts as image/color does (JFIF).
func TestFullRangeMatchesStdlib(t *testing.T) {
	for _, v := range [][3]uint8{{0, 128, 128}, {255, 128, 128}, {76, 85, 255}, {150, 44, 21}, {29, 255, 107}, {200, 10, 240}} {
		img, err := toRGBA(planar(frame.FormatI420, 2, 2, v[0], v[1], v[2], true), nil, 1)
		if err != nil {
			t.Fatal(err)
		}
		r, g, b := color.YCbCrToRGB(v[0], v[1], v[2])
		if p := img.RGBAAt(1, 1); absDiff(p.R, r) > 1 || absDiff(p.G, g) > 1 || absDiff(p.B, b) > 1 {
			t.Errorf("YCbCr %v = %v, image/color says (%d,%d,%d)", v, p, r, g, b)
		}
	}
}

func TestToRGBAErrors(t *testing.T) {
	short := planar(frame.FormatI420, 8, 8, 0, 0, 0, false)
	short.Planes[2] = short.Planes[2][:3]
	dev := planar(frame.FormatNV12, 8, 8, 0, 0, 0, false)
	dev.Device, dev.DevicePlanes[0] = 0, 0x1000
	for name, f := range map[string]*frame.Frame{
		"short plane": short,
		"device":      dev,
		"no size":     {Format: frame.FormatRGB24, Device: -1, Planes: [3][]byte{{1}}},
		"format":      {Format: frame.FormatUnknown, Width: 2, Height: 2, Device: -1, Planes: [3][]byte{make([]byte, 12)}, Strides: [3]int{6}},
	} {
		if _, err := toRGBA(f, nil, 1); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func absDiff(a, b uint8) uint8 {
	if a > b {
		return a - b
	}
	return b - a
}

// TestDrawResult: boxes land where the detections say, in the class color, scaled with the
// image; a box past the edge is clipped.
func TestDrawResult(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 384, 216))
	ev := &event{Detections: []detection{
		{ClassID: 0, Label: "person", Score: 0.87, Box: [4]float32{100, 40, 300, 400}},
		{ClassID: 2, Label: "car", Score: 0.5, Box: [4]float32{700, 100, 800, 160}}, // beyond the right edge
	}}
	if err := drawResult(img, ev, 0.5, "cam  #1  0.04 s"); err != nil {
		t.Fatal(err)
	}
	if p := img.RGBAAt(50, 150); p != palette[0] { // left edge of the person box, scaled by 0.5
		t.Errorf("person box edge = %v, want %v", p, palette[0])
	}
	if p := img.RGBAAt(100, 100); p != (color.RGBA{}) {
		t.Errorf("inside the box = %v, want untouched", p)
	}
	if p := img.RGBAAt(383, 70); p != palette[2] { // clipped car box, right edge
		t.Errorf("clipped car box edge = %v, want %v", p, palette[2])
	}
}

// BenchmarkSnapshot measures one 768×432 snapshot: I420 → RGBA, a box, JPEG at quality 80.
func BenchmarkSnapshot(b *testing.B) {
	f := planar(frame.FormatI420, 768, 432, 120, 110, 140, false)
	ev := &event{Detections: []detection{{Label: "person", Score: 0.9, Box: [4]float32{100, 50, 300, 400}}}}
	var dst *image.RGBA
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if dst, err = toRGBA(f, dst, 1); err != nil {
			b.Fatal(err)
		}
		if err := drawResult(dst, ev, 1, "cam #1"); err != nil {
			b.Fatal(err)
		}
		buf.Reset()
		if err := jpeg.Encode(&buf, dst, &jpeg.Options{Quality: 80}); err != nil {
			b.Fatal(err)
		}
	}
}
