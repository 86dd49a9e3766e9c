package motion

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/frame"
)

// scene draws a w×h luma plane: a textured background with sensor noise (±noise levels), plus
// a bright square of side sq at (x, y) when sq > 0, all shifted by light levels.
func scene(f *frame.Frame, rng *rand.Rand, noise, light, x, y, sq int) {
	w, h := f.Width, f.Height
	for r := 0; r < h; r++ {
		for c := 0; c < w; c++ {
			v := 60 + (c/16+r/16)%2*40 + light
			if noise > 0 {
				v += rng.IntN(2*noise+1) - noise
			}
			if sq > 0 && c >= x && c < x+sq && r >= y && r < y+sq {
				v = 230
			}
			f.Planes[0][r*f.Strides[0]+c] = uint8(min(255, max(0, v)))
		}
	}
}

func newFrame(w, h int) *frame.Frame {
	f := &frame.Frame{Format: frame.FormatI420, Width: w, Height: h}
	f.Strides[0] = w + 32 // padded rows, as decoders leave them
	f.Planes[0] = make([]byte, f.Strides[0]*h)
	return f
}

func TestDetector(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	f := newFrame(768, 432)
	cases := []struct {
		name       string
		mask       []Polygon
		light      int
		sq         int
		wantMotion bool
		wantLight  bool
	}{
		{name: "noise only", wantMotion: false},
		{name: "a moving object", sq: 60, wantMotion: true},
		{name: "lights on", light: 70, wantLight: true},
		{name: "object in the mask", sq: 60, mask: []Polygon{{{300, 100}, {500, 100}, {500, 300}, {300, 300}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := New(Config{Mask: c.mask})
			if err != nil {
				t.Fatal(err)
			}
			scene(f, rng, 6, 0, 0, 0, 0)
			if r := d.Process(f); !r.Learning {
				t.Fatalf("first frame: %+v, want Learning", r)
			}
			for i := 0; i < 5; i++ { // still frames with noise: nothing moves
				scene(f, rng, 6, 0, 0, 0, 0)
				if r := d.Process(f); r.Moving() || r.Lighting {
					t.Fatalf("still frame %d: %+v", i, r)
				}
			}
			scene(f, rng, 6, c.light, 380, 170, c.sq)
			r := d.Process(f)
			if r.Moving() != c.wantMotion || r.Lighting != c.wantLight {
				t.Fatalf("got moving %v lighting %v (%+v), want %v %v", r.Moving(), r.Lighting, r, c.wantMotion, c.wantLight)
			}
			if c.wantMotion {
				b := r.Boxes[0]
				if len(r.Boxes) != 1 || b.X0 > 380+32 || b.Y0 > 170+32 || b.X1 < 440-32 || b.Y1 < 230-32 || b.X1-b.X0 > 160 || b.Y1-b.Y0 > 160 {
					t.Fatalf("boxes %+v, want one around (380,170)-(440,230) within a cell (32 px)", r.Boxes)
				}
				if r.Fraction <= 0 || r.Fraction > 0.1 {
					t.Fatalf("fraction %v", r.Fraction)
				}
			}
		})
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	for field, c := range map[string]Config{
		"width":      {Width: 8},
		"threshold":  {Threshold: 300},
		"cell":       {Cell: 1},
		"cell_share": {CellShare: 2},
		"lighting":   {Lighting: -1},
		"learn":      {Learn: 9},
		"mask[0]":    {Mask: []Polygon{{{0, 0}, {1, 1}}}},
	} {
		_, err := New(c)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err %v", field, err)
		}
	}
}

func TestShortPlaneIsIgnored(t *testing.T) {
	d, _ := New(Config{})
	f := newFrame(64, 64)
	f.Planes[0] = f.Planes[0][:100]
	if r := d.Process(f); r.Learning || r.Moving() {
		t.Fatalf("%+v", r)
	}
}

// BenchmarkProcess is the gate's cost per 768×432 frame (docs/benchmarks.md, "Activity").
func BenchmarkProcess(b *testing.B) {
	for _, size := range [][2]int{{768, 432}, {1920, 1080}} {
		b.Run(fmtSize(size), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			d, _ := New(Config{})
			f0, f1 := newFrame(size[0], size[1]), newFrame(size[0], size[1])
			scene(f0, rng, 6, 0, 0, 0, 0)
			scene(f1, rng, 6, 0, size[0]/2, size[1]/2, size[1]/6)
			d.Process(f0)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if i%2 == 0 {
					d.Process(f1)
				} else {
					d.Process(f0)
				}
			}
		})
	}
}

func fmtSize(s [2]int) string { return fmt.Sprintf("%dx%d", s[0], s[1]) }
