package onnxedit

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/imageio"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/preprocess"
)

// cpuTime is the CPU time (user + system) the process used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func asset(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(testutil.Root(t), "assets", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: run scripts/setup.sh", err)
	}
	return p
}

func readModel(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(asset(t, filepath.Join("models", name)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func open(t testing.TB, name string, b []byte, maxBatch int) *infer.Session {
	t.Helper()
	s, err := infer.Open(infer.Config{Path: name, Model: b, IntraOpThreads: 1, MaxBatch: maxBatch})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// infer runs imgs through s in one batch and returns, per image, its outputs concatenated.
func run(t testing.TB, s *infer.Session, imgs [][]float32) [][]float32 {
	t.Helper()
	in, err := s.Input(len(imgs))
	if err != nil {
		t.Fatal(err)
	}
	per := len(in) / len(imgs)
	for i, img := range imgs {
		copy(in[i*per:(i+1)*per], img)
	}
	outs, err := s.Run(len(imgs))
	if err != nil {
		t.Fatal(err)
	}
	res := make([][]float32, len(imgs))
	for _, o := range outs {
		if o.Shape[0] != int64(len(imgs)) {
			t.Fatalf("output %s has shape %v for a batch of %d", o.Name, o.Shape, len(imgs))
		}
		n := len(o.Data) / len(imgs)
		for i := range imgs {
			res[i] = append(res[i], o.Data[i*n:(i+1)*n]...)
		}
	}
	return res
}

// maxDiff is the largest absolute difference of a and b.
func maxDiff(t testing.TB, a, b []float32) float64 {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("outputs of %d and %d values", len(a), len(b))
	}
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// images returns the bundled stills preprocessed for family f at w×h: four different inputs.
func images(t testing.TB, f detect.Family, w, h int) [][]float32 {
	t.Helper()
	k, _ := detect.Lookup(f)
	spec := k.Preprocess
	spec.Width, spec.Height = w, h
	pre, err := preprocess.NewCPU(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer pre.Close()
	var out [][]float32
	for _, name := range []string{"dog.jpg", "person.jpg", "office_person_frame60s.jpg", "office_face_frame690.jpg"} {
		fr, err := imageio.Load(asset(t, filepath.Join("images", name)))
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, 3*w*h)
		if _, err := pre.Run(fr, dst); err != nil {
			t.Fatal(err)
		}
		out = append(out, dst)
	}
	return out
}

// TestYOLOXBatch4: the rewritten YOLOX-Nano at batch 4 gives each image the outputs the
// original gives it at batch 1 (within 1e-4), with and without the Focus Conv.
func TestYOLOXBatch4(t *testing.T) {
	orig := readModel(t, "yolox_nano_416.onnx")
	imgs := images(t, detect.FamilyYOLOX, 416, 416)
	s1 := open(t, "yolox_nano_416.onnx", orig, 1)
	if s1.ModelBatch() != 1 {
		t.Fatalf("original batch %d, want fixed 1", s1.ModelBatch())
	}
	want := make([][]float32, len(imgs))
	for i, img := range imgs {
		want[i] = run(t, s1, [][]float32{img})[0]
	}
	for _, focus := range []bool{false, true} {
		out, rep, err := Rewrite(orig, Options{FocusConv: focus})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("focus %v: %s", focus, rep)
		if rep.FromBatch != 1 || rep.Reshapes != 3 || (rep.FocusSlices == 8) != focus {
			t.Errorf("focus %v: report %+v, want from batch 1, 3 Reshapes, Focus %v", focus, rep, focus)
		}
		s4 := open(t, "rewritten", out, 4)
		if s4.ModelBatch() != -1 || s4.MaxBatch() != 4 {
			t.Fatalf("rewritten: batch %d, max %d; want dynamic, 4", s4.ModelBatch(), s4.MaxBatch())
		}
		got := run(t, s4, imgs)
		for i := range imgs {
			if d := maxDiff(t, want[i], got[i]); d > 1e-4 {
				t.Errorf("focus %v: image %d differs from batch 1 by %g", focus, i, d)
			} else {
				t.Logf("focus %v: image %d: max |Δ| %g", focus, i, d)
			}
		}
	}
}

// TestUltraFaceBatch: UltraFace (IR 4: initializers listed as inputs; shapes computed with
// Shape/Gather) becomes dynamic without patching a Reshape.
func TestUltraFaceBatch(t *testing.T) {
	orig := readModel(t, "ultraface_rfb_320.onnx")
	out, rep, err := Rewrite(orig, Options{FocusConv: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.FromBatch != 1 || rep.Reshapes != 0 || rep.FocusSlices != 0 {
		t.Errorf("report %+v", rep)
	}
	imgs := images(t, detect.FamilyUltraFace, 320, 240)[:2]
	s1, s2 := open(t, "orig", orig, 1), open(t, "rewritten", out, 2)
	got := run(t, s2, imgs)
	for i, img := range imgs {
		if d := maxDiff(t, run(t, s1, [][]float32{img})[0], got[i]); d > 1e-4 {
			t.Errorf("image %d differs by %g", i, d)
		}
	}
}

// TestFastestDetRefused: FastestDet's channel shuffle folds the batch into Reshape targets.
func TestFastestDetRefused(t *testing.T) {
	_, _, err := Rewrite(readModel(t, "fastestdet_352.onnx"), Options{FocusConv: true})
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "Reshape_13 to [24 2 1936] puts 24 first") {
		t.Fatalf("err = %v, want an UnsupportedError naming Reshape_13", err)
	}
}

// TestTiny: the toy model with its shape in an initializer and in a Constant node, batch 3
// against batch 1, with the Focus Conv.
func TestTiny(t *testing.T) {
	imgs := make([][]float32, 3)
	for i := range imgs {
		imgs[i] = make([]float32, 3*8*8)
		for j := range imgs[i] {
			imgs[i][j] = float32((j*7+i*13)%17) - 8
		}
	}
	for _, cn := range []bool{false, true} {
		orig := tinyModel(cn)
		out, rep, err := Rewrite(orig, Options{FocusConv: true})
		if err != nil {
			t.Fatal(err)
		}
		if rep.FromBatch != 1 || rep.Reshapes != 1 || rep.FocusSlices != 8 || rep.ValueInfo != 1 {
			t.Errorf("constant node %v: report %+v", cn, rep)
		}
		s1, s3 := open(t, "tiny", orig, 1), open(t, "tiny rewritten", out, 3)
		got := run(t, s3, imgs)
		for i, img := range imgs {
			if d := maxDiff(t, run(t, s1, [][]float32{img})[0], got[i]); d != 0 {
				t.Errorf("constant node %v: image %d differs by %g", cn, i, d)
			}
		}
		// A second pass finds nothing left to do.
		if _, _, err := Rewrite(out, Options{FocusConv: true}); !errors.Is(err, ErrUnchanged) {
			t.Errorf("second rewrite: %v, want ErrUnchanged", err)
		}
	}
}

// TestFocusOnly: a model whose batch is dynamic already still gets its Focus replaced.
func TestFocusOnly(t *testing.T) {
	dyn, _, err := Rewrite(tinyModel(false), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Rewrite(dyn, Options{}); !errors.Is(err, ErrUnchanged) {
		t.Fatalf("err = %v, want ErrUnchanged", err)
	}
	_, rep, err := Rewrite(dyn, Options{FocusConv: true})
	if err != nil || rep.FromBatch != 0 || rep.FocusSlices != 8 {
		t.Fatalf("rep %+v, err %v", rep, err)
	}
}

// TestNotONNX: truncated and garbage bytes give an error wrapping ErrNotONNX.
func TestNotONNX(t *testing.T) {
	yolox := readModel(t, "yolox_nano_416.onnx")
	for name, b := range map[string][]byte{
		"empty":     nil,
		"truncated": yolox[:len(yolox)/2],
		"text":      []byte("models:\n  - name: yolox\n"),
		"zeros":     make([]byte, 64),
		"jpeg":      []byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"),
	} {
		_, _, err := Rewrite(b, Options{FocusConv: true})
		if !errors.Is(err, ErrNotONNX) {
			t.Errorf("%s: err = %v, want ErrNotONNX", name, err)
		}
	}
}

// FuzzRewrite: any bytes give a result or an error, never a panic; a result rewrites to
// ErrUnchanged (nothing left to do) or fails cleanly.
func FuzzRewrite(f *testing.F) {
	f.Add(tinyModel(false))
	f.Add(tinyModel(true))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _, err := Rewrite(b, Options{FocusConv: true})
		if err != nil {
			var ue *UnsupportedError
			if !errors.Is(err, ErrNotONNX) && !errors.Is(err, ErrUnchanged) && !errors.As(err, &ue) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if _, _, err := Rewrite(out, Options{FocusConv: true}); err == nil {
			t.Fatalf("a rewritten model rewrites again")
		}
	})
}

// BenchmarkYOLOX: inference alone, per frame, of the bundled YOLOX-Nano as exported (batch 1)
// and rewritten (Focus as a Conv) at batch 1 and 4, one intra-op thread, side by side: wall
// time (ms/frame) and the process's CPU time (cpu-ms/frame, less sensitive to other load on a
// shared machine).
//
//	go test -run XXX -bench YOLOX -benchtime 40x -count 3 ./model/onnxedit/
func BenchmarkYOLOX(b *testing.B) {
	orig := readModel(b, "yolox_nano_416.onnx")
	out, _, err := Rewrite(orig, Options{FocusConv: true})
	if err != nil {
		b.Fatal(err)
	}
	imgs := images(b, detect.FamilyYOLOX, 416, 416)
	for _, c := range []struct {
		name  string
		model []byte
		batch int
	}{{"original/batch=1", orig, 1}, {"rewritten/batch=1", out, 1}, {"rewritten/batch=4", out, 4}} {
		b.Run(c.name, func(b *testing.B) {
			s := open(b, c.name, c.model, c.batch)
			run(b, s, imgs[:c.batch])
			cpu0 := cpuTime()
			b.ResetTimer()
			for range b.N {
				run(b, s, imgs[:c.batch])
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N*c.batch), "ms/frame")
			b.ReportMetric(float64((cpuTime()-cpu0).Microseconds())/1e3/float64(b.N*c.batch), "cpu-ms/frame")
		})
	}
}
