package preprocess

import (
	"fmt"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/testutil"
)

// The three reference models' preprocessing (assets/MANIFEST.md).
var (
	specYOLOX = Spec{Width: 416, Height: 416, Color: BGR, Resize: Letterbox, Align: TopLeft,
		Interp: Bilinear, Pad: 114, Scale: 1, Std: [3]float32{1, 1, 1}}
	specFastestDet = Spec{Width: 352, Height: 352, Color: BGR, Resize: Stretch, Interp: Area,
		Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}}
	specUltraFace = Spec{Width: 320, Height: 240, Color: RGB, Resize: Stretch, Interp: Bilinear,
		Scale: 1, Mean: [3]float32{127, 127, 127}, Std: [3]float32{128, 128, 128}}
	specCenterRGB = Spec{Width: 64, Height: 48, Color: RGB, Resize: Letterbox, Align: Center,
		Interp: Bilinear, Pad: 0, Scale: 1.0 / 255, Mean: [3]float32{0.485, 0.456, 0.406},
		Std: [3]float32{0.229, 0.224, 0.225}}
)

func with(s Spec, edit func(*Spec)) Spec { edit(&s); return s }

// resizeCases are source sizes and specs covering down- and upscaling, both filters, both
// alignments, odd and tiny sizes; the fuzzer starts from them.
var resizeCases = []struct {
	name string
	w, h int
	spec Spec
}{
	{"yolox 768x432", 768, 432, specYOLOX},
	{"yolox 768x576", 768, 576, specYOLOX},
	{"yolox portrait", 240, 400, specYOLOX},
	{"fastestdet area 768x432", 768, 432, specFastestDet},
	{"ultraface rgb stretch", 768, 432, specUltraFace},
	{"center letterbox mean/std", 101, 37, specCenterRGB},
	{"upscale letterbox", 64, 36, specYOLOX},
	{"upscale area (bilinear variant)", 50, 30, with(specFastestDet, func(s *Spec) { s.Width, s.Height = 120, 90 })},
	{"area mixed up/down", 200, 30, with(specFastestDet, func(s *Spec) { s.Width, s.Height = 64, 64 })},
	{"area 2x exact", 128, 96, with(specFastestDet, func(s *Spec) { s.Width, s.Height = 64, 48 })},
	{"area 5.3x", 1920, 1080, specFastestDet},
	{"area 150x wide windows", 900, 600, with(specFastestDet, func(s *Spec) { s.Width, s.Height = 6, 4 })},
	{"bilinear 1920x1080 sparse columns", 1920, 1080, specYOLOX},
	{"bilinear exact 2x", 832, 832, specYOLOX},
	{"odd 7x5", 7, 5, specYOLOX},
	{"odd 7x5 area", 7, 5, with(specFastestDet, func(s *Spec) { s.Width, s.Height = 3, 2 })},
	{"1x1", 1, 1, with(specYOLOX, func(s *Spec) { s.Width, s.Height = 3, 3 })},
	{"1x1 area", 1, 1, with(specFastestDet, func(s *Spec) { s.Width, s.Height = 1, 1 })},
	{"same size", 33, 17, with(specUltraFace, func(s *Spec) { s.Width, s.Height = 33, 17 })},
	{"thin line", 1000, 2, with(specCenterRGB, func(s *Spec) { s.Width, s.Height = 20, 20 })},
	{"tall line area", 3, 900, with(specFastestDet, func(s *Spec) { s.Width, s.Height = 2, 7 })},
}

func TestPlace(t *testing.T) {
	for _, tc := range []struct {
		spec       Spec
		w, h       int
		want       Placement
		wantScaleX float32
	}{
		// 416/768·432 = 233.99999999999997 in float64: YOLOX's int() gives 233.
		{specYOLOX, 768, 432, Placement{0, 0, 416, 233}, 416.0 / 768},
		{specYOLOX, 768, 576, Placement{0, 0, 416, 312}, 416.0 / 768},
		{specYOLOX, 640, 424, Placement{0, 0, 416, 275}, 416.0 / 640},
		{specYOLOX, 1920, 1080, Placement{0, 0, 416, 234}, 416.0 / 1920},
		{specYOLOX, 432, 768, Placement{0, 0, 233, 416}, 233.0 / 432},
		{specYOLOX, 64, 36, Placement{0, 0, 416, 234}, 416.0 / 64},
		{with(specYOLOX, func(s *Spec) { s.Align = Center }), 768, 432, Placement{0, 91, 416, 233}, 416.0 / 768},
		{with(specYOLOX, func(s *Spec) { s.Align = Center }), 432, 768, Placement{91, 0, 233, 416}, 233.0 / 432},
		{specCenterRGB, 101, 37, Placement{0, 12, 64, 23}, 64.0 / 101},
		{specYOLOX, 5000, 1, Placement{0, 0, 416, 1}, 416.0 / 5000}, // height clamped to 1 pixel
		{specFastestDet, 768, 432, Placement{0, 0, 352, 352}, 352.0 / 768},
		{specUltraFace, 1, 1, Placement{0, 0, 320, 240}, 320},
	} {
		got := tc.spec.Place(tc.w, tc.h)
		if got != tc.want {
			t.Errorf("%dx%d into %dx%d: placement %+v, want %+v", tc.w, tc.h, tc.spec.Width, tc.spec.Height, got, tc.want)
		}
		tr := got.Transform(tc.w, tc.h)
		if tr.ScaleX != tc.wantScaleX {
			t.Errorf("%dx%d: ScaleX %v, want %v", tc.w, tc.h, tr.ScaleX, tc.wantScaleX)
		}
		// The resized picture's corners map back to the source corners.
		corners := tr.ToSource([4]float32{float32(got.X), float32(got.Y), float32(got.X + got.Width), float32(got.Y + got.Height)})
		want := [4]float32{0, 0, float32(tc.w), float32(tc.h)}
		for i := range corners {
			if math.Abs(float64(corners[i]-want[i])) > 1e-3*float64(max(tc.w, tc.h)) {
				t.Errorf("%dx%d: corners map to %v, want %v", tc.w, tc.h, corners, want)
				break
			}
		}
		// A box inside the source survives source → net → source.
		b := [4]float32{float32(tc.w) / 4, float32(tc.h) / 3, float32(tc.w) / 2, float32(tc.h) * 0.9}
		net := [4]float32{b[0]*tr.ScaleX + tr.OffsetX, b[1]*tr.ScaleY + tr.OffsetY, b[2]*tr.ScaleX + tr.OffsetX, b[3]*tr.ScaleY + tr.OffsetY}
		back := tr.ToSource(net)
		for i := range back {
			if math.Abs(float64(back[i]-b[i])) > 1e-3*float64(max(tc.w, tc.h)) {
				t.Errorf("%dx%d: box %v round-trips to %v", tc.w, tc.h, b, back)
				break
			}
		}
	}
}

// TestExact compares Run on BGR24 frames with the float reference: at most one 8-bit step apart.
func TestExact(t *testing.T) {
	for _, tc := range resizeCases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPicture(tc.w, tc.h, 1)
			c, err := NewCPU(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, 3*tc.spec.Width*tc.spec.Height)
			tr, err := c.Run(p.frame(frame.FormatBGR24), got)
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.spec.Place(tc.w, tc.h).Transform(tc.w, tc.h); tr != want {
				t.Errorf("transform %+v, want %+v", tr, want)
			}
			want := referenceResize(p.bgr, tc.w, tc.h, tc.spec)
			d, at := maxAbsDiff(got, want)
			if d > oneLevel(tc.spec)*1.0001 {
				t.Errorf("max abs diff %.4g (%.2f levels) at %s: got %v, want %v", d, d/oneLevel(tc.spec), where(tc.spec, at), got[at], want[at])
			}
		})
	}
}

// TestFormatsAgree runs the same picture through all four pixel formats: NV12 and I420 give
// identical tensors, RGB24 and BGR24 too, and YUV matches BGR within two steps: the BGR
// picture was converted in float, so its pixels may be one step from the integer conversion's,
// and OpenCV's truncating vertical bilinear pass (vLinear) may add one more on either side.
func TestFormatsAgree(t *testing.T) {
	for _, tc := range resizeCases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPicture(tc.w, tc.h, 2)
			c, err := NewCPU(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			n := 3 * tc.spec.Width * tc.spec.Height
			out := map[frame.PixelFormat][]float32{}
			for _, f := range []frame.PixelFormat{frame.FormatI420, frame.FormatNV12, frame.FormatBGR24, frame.FormatRGB24} {
				out[f] = make([]float32, n)
				if _, err := c.Run(p.frame(f), out[f]); err != nil {
					t.Fatal(f, err)
				}
			}
			if d, at := maxAbsDiff(out[frame.FormatI420], out[frame.FormatNV12]); d != 0 {
				t.Errorf("i420 vs nv12: diff %g at %s", d, where(tc.spec, at))
			}
			if d, at := maxAbsDiff(out[frame.FormatBGR24], out[frame.FormatRGB24]); d != 0 {
				t.Errorf("bgr24 vs rgb24: diff %g at %s", d, where(tc.spec, at))
			}
			if d, at := maxAbsDiff(out[frame.FormatI420], out[frame.FormatBGR24]); d > 2*oneLevel(tc.spec)*1.0001 {
				t.Errorf("i420 vs bgr24: diff %g (%.2f levels) at %s", d, d/oneLevel(tc.spec), where(tc.spec, at))
			}
		})
	}
}

// TestYUVConversion checks the integer conversion against the float formula on every Y, U, V
// triple: exactly OpenCV's rounding would be within one step.
func TestYUVConversion(t *testing.T) {
	for _, full := range []bool{false, true} {
		tab := newYUVTables(full)
		worst := 0
		for y := range 256 {
			for u := range 256 {
				for v := range 256 {
					px := tab.pixel(uint8(y), uint8(u), uint8(v))
					b, g, r := yuvToBGRFloat(uint8(y), uint8(u), uint8(v), full)
					for i, want := range [3]uint8{b, g, r} {
						got := int(px >> (i * laneBits) & laneMask)
						worst = max(worst, absInt(got-int(want)))
					}
				}
			}
		}
		if worst > 1 {
			t.Errorf("full range %v: integer conversion off by %d from the float formula", full, worst)
		}
	}
}

func absInt(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// TestReuse runs one CPU over frames of changing sizes and formats: each result equals a fresh
// CPU's (tables recomputed on a size change, no state leaking between frames).
func TestReuse(t *testing.T) {
	for _, workers := range []int{1, 3} {
		shared := &CPU{Spec: specYOLOX, Workers: workers}
		if err := shared.Init(); err != nil {
			t.Fatal(err)
		}
		defer shared.Close()
		got := make([]float32, 3*416*416)
		want := make([]float32, 3*416*416)
		for i, sz := range [][2]int{{768, 432}, {768, 432}, {64, 36}, {7, 5}, {768, 432}, {1920, 1080}} {
			p := newPicture(sz[0], sz[1], uint64(i))
			f := p.frame([]frame.PixelFormat{frame.FormatI420, frame.FormatBGR24, frame.FormatNV12}[i%3])
			for j := range got {
				got[j] = float32(j) // stale content must be overwritten
			}
			if _, err := shared.Run(f, got); err != nil {
				t.Fatal(err)
			}
			fresh, _ := NewCPU(specYOLOX)
			if _, err := fresh.Run(f, want); err != nil {
				t.Fatal(err)
			}
			if d, at := maxAbsDiff(got, want); d != 0 {
				t.Errorf("workers %d, frame %d (%dx%d): differs from a fresh CPU by %g at %s", workers, i, sz[0], sz[1], d, where(specYOLOX, at))
			}
		}
	}
}

// TestWorkersStop checks that Close, and dropping a CPU without Close, end its goroutines.
func TestWorkersStop(t *testing.T) {
	base := settledGoroutines(t) // other tests' workers may still be exiting
	fr := newPicture(64, 48, 6).frame(frame.FormatI420)
	dst := make([]float32, 3*416*416)
	c := &CPU{Spec: specYOLOX, Workers: 4}
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	c.Run(fr, dst)
	if n := runtime.NumGoroutine(); n < base+3 {
		t.Fatalf("%d goroutines with 4 workers, %d before", n, base)
	}
	c.Close()
	waitGoroutines(t, base, "after Close")
	func() {
		c := &CPU{Spec: specYOLOX, Workers: 4}
		c.Init()
		c.Run(fr, dst)
	}()
	waitGoroutines(t, base, "after dropping an unclosed CPU")
}

// settledGoroutines returns the number of goroutines once it held still over five checks in a
// row, garbage collecting before each (unclosed CPUs end their workers when collected).
func settledGoroutines(t *testing.T) int {
	t.Helper()
	n, stable := -1, 0
	testutil.Eventually(t, 30*time.Second, "the goroutine count to settle", func() bool {
		runtime.GC()
		if m := runtime.NumGoroutine(); m == n {
			stable++
		} else {
			n, stable = m, 0
		}
		return stable >= 5
	})
	return n
}

func waitGoroutines(t *testing.T, want int, when string) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, fmt.Sprintf("at most %d goroutines %s", want, when), func() bool {
		runtime.GC()
		return runtime.NumGoroutine() <= want
	})
}

func TestRunErrors(t *testing.T) {
	p := newPicture(16, 8, 3)
	good := p.frame(frame.FormatI420)
	short := p.frame(frame.FormatI420)
	short.Planes[2] = short.Planes[2][:10]
	badStride := p.frame(frame.FormatBGR24)
	badStride.Strides[0] = 10
	dev := p.frame(frame.FormatNV12)
	dev.Device, dev.DevicePlanes[0] = 0, 0x1000
	unknown := p.frame(frame.FormatBGR24)
	unknown.Format = frame.FormatUnknown
	empty := &frame.Frame{Format: frame.FormatBGR24, Device: -1}

	c, err := NewCPU(specYOLOX)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float32, 3*416*416)
	for _, tc := range []struct {
		name string
		c    *CPU
		f    *frame.Frame
		dst  []float32
		want string
	}{
		{"not initialised", &CPU{Spec: specYOLOX}, good, dst, "before Init"},
		{"nil frame", c, nil, dst, "nil frame"},
		{"device frame", c, dev, dst, "GPU memory"},
		{"unknown format", c, unknown, dst, "not supported"},
		{"empty frame", c, empty, dst, "must be positive"},
		{"short plane", c, short, dst, "plane 2 holds 10 bytes"},
		{"bad stride", c, badStride, dst, "stride 10"},
		{"short dst", c, good, dst[:100], "destination holds 100"},
	} {
		if _, err := tc.c.Run(tc.f, tc.dst); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := NewCPU(Spec{Width: 10, Height: 10, Scale: 1}); err == nil {
		t.Error("NewCPU accepted a spec with std 0")
	}
}

func TestRunAllocs(t *testing.T) {
	for _, tc := range resizeCases[:6] {
		for _, f := range []frame.PixelFormat{frame.FormatI420, frame.FormatBGR24} {
			c, _ := NewCPU(tc.spec)
			fr := newPicture(tc.w, tc.h, 4).frame(f)
			dst := make([]float32, 3*tc.spec.Width*tc.spec.Height)
			if a := testing.AllocsPerRun(5, func() { c.Run(fr, dst) }); a != 0 {
				t.Errorf("%s %v: %v allocations per frame", tc.name, f, a)
			}
		}
	}
	c := &CPU{Spec: specYOLOX, Workers: 2}
	c.Init()
	defer c.Close()
	fr := newPicture(768, 432, 4).frame(frame.FormatI420)
	dst := make([]float32, 3*416*416)
	if a := testing.AllocsPerRun(5, func() { c.Run(fr, dst) }); a != 0 {
		t.Errorf("2 workers: %v allocations per frame", a)
	}
}

// FuzzRun feeds random sizes, formats and specs: Run must not panic or write past the slot,
// every value must lie in the normalised 0…255 range, a BGR24 frame must stay within one step
// of the float reference, and the other formats within two steps of BGR24 (see
// TestFormatsAgree).
func FuzzRun(f *testing.F) {
	for i, tc := range resizeCases {
		s := tc.spec
		f.Add(uint16(tc.w), uint16(tc.h), uint16(s.Width), uint16(s.Height), uint8(i%4), uint8(s.Resize)<<2|uint8(s.Align)<<1|uint8(s.Interp), uint8(s.Color), s.Pad, uint64(i))
	}
	f.Fuzz(func(t *testing.T, w, h, W, H uint16, format, mode, color, pad uint8, seed uint64) {
		w, h = w%700+1, h%700+1
		W, H = W%300+1, H%300+1
		s := Spec{Width: int(W), Height: int(H), Color: ColorOrder(color & 1), Resize: ResizeMode(mode >> 2 & 1),
			Align: Align(mode >> 1 & 1), Interp: Interp(mode & 1), Pad: pad, Scale: 1.0 / 255,
			Mean: [3]float32{0.1, 0.2, 0.3}, Std: [3]float32{0.5, 0.25, 1}}
		p := newPicture(int(w), int(h), seed)
		c, err := NewCPU(s)
		if err != nil {
			t.Fatal(err)
		}
		n := 3 * s.Width * s.Height
		run := func(f frame.PixelFormat) []float32 {
			dst := make([]float32, n+1)
			dst[n] = 42
			if _, err := c.Run(p.frame(f), dst); err != nil {
				t.Fatal(err)
			}
			if dst[n] != 42 {
				t.Fatal("wrote past the slot")
			}
			for i, v := range dst[:n] {
				ch := i / (s.Width * s.Height)
				lo, hi := (0-s.Mean[ch])/s.Std[ch], (s.Scale*255-s.Mean[ch])/s.Std[ch]
				if !(v >= lo-1e-6 && v <= hi+1e-6) {
					t.Fatalf("%v: value %v at %s outside [%v, %v]", f, v, where(s, i), lo, hi)
				}
			}
			return dst[:n]
		}
		bgr := run(frame.FormatBGR24)
		step := oneLevel(s) * 1.0001
		if d, at := maxAbsDiff(bgr, referenceResize(p.bgr, p.w, p.h, s)); d > step {
			t.Fatalf("bgr24 differs from the float reference by %.2f steps at %s", d/oneLevel(s), where(s, at))
		}
		if f := frame.PixelFormat(format%4 + 1); f != frame.FormatBGR24 {
			if d, at := maxAbsDiff(run(f), bgr); d > 2*step {
				t.Fatalf("%v differs from bgr24 by %.2f steps at %s", f, d/oneLevel(s), where(s, at))
			}
		}
	})
}

func where(s Spec, i int) string {
	if i < 0 {
		return "-"
	}
	plane := s.Width * s.Height
	return fmt.Sprintf("c%d y%d x%d", i/plane, i%plane/s.Width, i%s.Width)
}

// BenchmarkRun measures one frame per op on one goroutine (Workers 1, the pipeline's setting),
// plus one case split over two workers.
func BenchmarkRun(b *testing.B) {
	for _, bc := range []struct {
		name    string
		format  frame.PixelFormat
		spec    Spec
		workers int
	}{
		{"i420_768x432_to_416_letterbox", frame.FormatI420, specYOLOX, 0},
		{"i420_768x432_to_352_area_stretch", frame.FormatI420, specFastestDet, 0},
		{"i420_768x432_to_320x240_rgb_stretch", frame.FormatI420, specUltraFace, 0},
		{"bgr24_768x432_to_416_letterbox", frame.FormatBGR24, specYOLOX, 0},
		{"nv12_1920x1080_to_416_letterbox", frame.FormatNV12, specYOLOX, 0},
		{"i420_768x432_to_416_letterbox_2workers", frame.FormatI420, specYOLOX, 2},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w, h := 768, 432
			if strings.Contains(bc.name, "1920") {
				w, h = 1920, 1080
			}
			fr := newPicture(w, h, 5).frame(bc.format)
			c := &CPU{Spec: bc.spec, Workers: bc.workers}
			if err := c.Init(); err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			dst := make([]float32, 3*bc.spec.Width*bc.spec.Height)
			if _, err := c.Run(fr, dst); err != nil { // tables for this size, outside the timing
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Run(fr, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
