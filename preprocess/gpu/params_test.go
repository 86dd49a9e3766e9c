package gpu

import (
	"bytes"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
)

// nv12Picture is a host NV12 picture with padded pitches, as NVDEC lays them out.
type nv12Picture struct {
	w, h, yPitch, uvPitch int
	y, uv                 []byte
	full                  bool
}

func randomNV12(r *rand.Rand, w, h int, full bool) nv12Picture {
	p := nv12Picture{w: w, h: h, yPitch: w + 64, uvPitch: w + w%2 + 64, full: full}
	p.y = make([]byte, p.yPitch*h)
	p.uv = make([]byte, p.uvPitch*((h+1)/2))
	for i := range p.y {
		p.y[i] = byte(r.IntN(256))
	}
	for i := range p.uv {
		p.uv[i] = byte(r.IntN(256))
	}
	return p
}

func (p nv12Picture) frame() *frame.Frame {
	return &frame.Frame{Format: frame.FormatNV12, Width: p.w, Height: p.h, FullRange: p.full, Device: -1,
		Planes: [3][]byte{p.y, p.uv}, Strides: [3]int{p.yPitch, p.uvPitch}}
}

func repoRoot(t testing.TB) string { return testutil.Root(t) }

// videoNV12 decodes the first n frames of a shared asset to NV12 with the ffmpeg CLI.
// On machines without the ffmpeg CLI (the GPU machine) it reads the first n pictures of
// car-detection.mp4 from $VINFER_GPU_TESTDATA/car-detection.nv12 (scripts/gpu/testdata.sh).
func videoNV12(t testing.TB, name string, n, w, h int) []nv12Picture {
	var out []byte
	if dir := os.Getenv("VINFER_GPU_TESTDATA"); dir != "" {
		b, err := os.ReadFile(filepath.Join(dir, "car-detection.nv12"))
		if err != nil {
			t.Fatal(err)
		}
		out = b[:min(len(b), n*w*h*3/2)]
	} else {
		path := filepath.Join(repoRoot(t), "assets", "videos", name)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("asset missing (run scripts/setup.sh): %v", err)
		}
		if _, err := exec.LookPath("ffmpeg"); err != nil {
			t.Skip("ffmpeg CLI not installed")
		}
		var err error
		out, err = exec.Command("ffmpeg", "-v", "error", "-i", path, "-frames:v", itoa(n), "-pix_fmt", "nv12", "-f", "rawvideo", "-").Output()
		if err != nil {
			t.Fatalf("ffmpeg: %v", err)
		}
	}
	size := w*h + w*h/2
	var pics []nv12Picture
	for len(out) >= size {
		pics = append(pics, nv12Picture{w: w, h: h, yPitch: w, uvPitch: w, y: bytes.Clone(out[:w*h]), uv: bytes.Clone(out[w*h : size])})
		out = out[size:]
	}
	if len(pics) != n {
		t.Fatalf("decoded %d frames, want %d", len(pics), n)
	}
	return pics
}

func itoa(n int) string { return string(rune('0'+n/10)) + string(rune('0'+n%10)) }

// TestReferenceMatchesCPU checks, without a GPU, that the kernel's arithmetic (ported to Go in
// reference) reproduces preprocess.CPU bit for bit: on real video frames and on random NV12 of
// odd sizes, padded pitches and both ranges, for every spec option.
func TestReferenceMatchesCPU(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	pics := videoNV12(t, "car-detection.mp4", 2, 768, 432)
	pics = append(pics, randomNV12(r, 1920, 1080, false), randomNV12(r, 641, 359, true), randomNV12(r, 3, 5, false), randomNV12(r, 300, 900, false))
	for name, spec := range testSpecs {
		for _, pic := range pics {
			// A fresh CPU per picture: this compares arithmetic, not the CPU's size-change path.
			cpu, err := preprocess.NewCPU(spec)
			if err != nil {
				t.Fatal(err)
			}
			p, err := plan(spec, pic.w, pic.h)
			if err != nil && spec.Interp == preprocess.Area {
				continue // INTER_AREA shrinking: CPU only
			}
			if err != nil {
				t.Fatalf("%s %dx%d: %v", name, pic.w, pic.h, err)
			}
			want := make([]float32, 3*spec.Width*spec.Height)
			tr, err := cpu.Run(pic.frame(), want)
			if err != nil {
				t.Fatal(err)
			}
			if tr != p.transform {
				t.Errorf("%s %dx%d: transform %+v, CPU %+v", name, pic.w, pic.h, p.transform, tr)
			}
			got := make([]float32, len(want))
			reference(&p, pic.y, pic.uv, pic.yPitch, pic.uvPitch, pic.full, got)
			if n, i := countDiff(got, want, 0); n > 0 {
				t.Errorf("%s %dx%d: %d values differ from CPU, first at %d: %v vs %v", name, pic.w, pic.h, n, i, got[i], want[i])
			}
		}
	}
}

// countDiff counts elements differing by more than tol and returns the first index.
func countDiff(a, b []float32, tol float32) (n, first int) {
	first = -1
	for i := range a {
		d := a[i] - b[i]
		if d > tol || d < -tol || d != d {
			if first < 0 {
				first = i
			}
			n++
		}
	}
	return n, first
}

// TestPlanErrors covers the geometry the kernel refuses.
func TestPlanErrors(t *testing.T) {
	spec := testSpecs["yolox416"]
	if _, err := plan(spec, 0, 10); err == nil {
		t.Error("zero width accepted")
	}
	spec.Interp = preprocess.Area
	if _, err := plan(spec, 1920, 1080); err == nil {
		t.Error("INTER_AREA downscaling accepted")
	}
	if _, err := plan(spec, 200, 100); err != nil {
		t.Errorf("INTER_AREA upscaling refused: %v", err)
	}
}

// TestPackLayout checks the argument buffer against struct Params of preprocess.cu: 152 bytes
// of Params, the destination pointer at 152 and the pad value at 160.
func TestPackLayout(t *testing.T) {
	p, err := plan(testSpecs["yolox416"], 1920, 1080)
	if err != nil {
		t.Fatal(err)
	}
	var a cuda.Args
	p.pack(&a, 0x1000, 0x2000, 2048, 2048, false, 0xdead00)
	if a.Len() != 164 || a.Err() != nil {
		t.Fatalf("packed %d bytes (err %v), want 164", a.Len(), a.Err())
	}
}

func FuzzReferenceMatchesCPU(f *testing.F) {
	f.Add(uint16(768), uint16(432), uint64(1), uint8(0))
	f.Add(uint16(7), uint16(3), uint64(2), uint8(3))
	f.Fuzz(func(t *testing.T, w, h uint16, seed uint64, which uint8) {
		if w == 0 || h == 0 || int(w)*int(h) > 1<<20 {
			t.Skip()
		}
		names := []string{"yolox416", "yolov8-640-center-rgb", "ultraface-stretch", "imagenet-area-up"}
		spec := testSpecs[names[int(which)%len(names)]]
		pic := randomNV12(rand.New(rand.NewPCG(seed, 7)), int(w), int(h), seed%2 == 1)
		p, err := plan(spec, pic.w, pic.h)
		if err != nil {
			t.Skip()
		}
		cpu, err := preprocess.NewCPU(spec)
		if err != nil {
			t.Fatal(err)
		}
		want := make([]float32, 3*spec.Width*spec.Height)
		if _, err := cpu.Run(pic.frame(), want); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, len(want))
		reference(&p, pic.y, pic.uv, pic.yPitch, pic.uvPitch, pic.full, got)
		if n, i := countDiff(got, want, 0); n > 0 {
			t.Fatalf("%dx%d: %d values differ, first at %d: %v vs %v", w, h, n, i, got[i], want[i])
		}
	})
}
