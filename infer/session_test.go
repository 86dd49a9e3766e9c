package infer

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// repoRoot walks up from the test's directory to the one holding go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	for d := filepath.Dir(file); ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatal("go.mod not found")
		}
	}
}

func asset(t testing.TB, rel string) string {
	p := filepath.Join(repoRoot(t), "assets", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s missing: run scripts/setup.sh", p)
	}
	return p
}

func TestBundledModels(t *testing.T) {
	for _, tc := range []struct {
		file    string
		input   string
		w, h    int
		outputs map[string][]int64
	}{
		{"yolox_nano_416.onnx", "images", 416, 416, map[string][]int64{"output": {1, 3549, 85}}},
		{"fastestdet_352.onnx", "input.1", 352, 352, map[string][]int64{"758": {1, 85, 22, 22}}},
		{"ultraface_rfb_320.onnx", "input", 320, 240, map[string][]int64{"scores": {1, 4420, 2}, "boxes": {1, 4420, 4}}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			s, err := Open(Config{Path: asset(t, "models/"+tc.file), IntraOpThreads: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.InputInfo().Name != tc.input {
				t.Errorf("input %q", s.InputInfo().Name)
			}
			if w, h := s.InputSize(); w != tc.w || h != tc.h {
				t.Errorf("input size %dx%d", w, h)
			}
			if s.MaxBatch() != 1 || !s.FixedBatch() {
				t.Errorf("batch %d fixed %v", s.MaxBatch(), s.FixedBatch())
			}
			in, err := s.Input(1)
			if err != nil || len(in) != 3*tc.w*tc.h {
				t.Fatalf("input len %d err %v", len(in), err)
			}
			outs, err := s.Run(1)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range outs {
				want := tc.outputs[o.Name]
				if !equal(o.Shape, want) || len(o.Data) != int(elements(want)) {
					t.Errorf("output %s shape %v (len %d), want %v", o.Name, o.Shape, len(o.Data), want)
				}
			}
			if _, err := s.Run(2); err == nil {
				t.Error("batch 2 accepted by a fixed-batch model")
			}
			if a := testing.AllocsPerRun(5, func() { s.Run(1) }); a != 0 {
				t.Errorf("%v allocations per Run", a)
			}
		})
	}
}

func TestNotONNX(t *testing.T) {
	p := filepath.Join(t.TempDir(), "model.onnx")
	os.WriteFile(p, []byte("this is not a model\n"), 0o644)
	_, err := Open(Config{Path: p})
	if err == nil || !strings.Contains(err.Error(), "ONNX") || !strings.Contains(err.Error(), "CreateSessionFromArray") {
		t.Fatalf("err = %v", err)
	}
	if _, err := Open(Config{Path: filepath.Join(t.TempDir(), "missing.onnx")}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing file: %v", err)
	}
	if _, err := Open(Config{Path: asset(t, "models/yolox_nano_416.onnx"), Provider: "tensorrt"}); err == nil || !strings.Contains(err.Error(), "not available") {
		t.Fatalf("tensorrt: %v", err)
	}
}

func TestOptimizedModelWritten(t *testing.T) {
	out := filepath.Join(t.TempDir(), "opt.onnx")
	s, err := Open(Config{Path: asset(t, "models/ultraface_rfb_320.onnx"), OptimizedModelPath: out})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 {
		t.Fatalf("optimized model not written: %v", err)
	}
	s, err = Open(Config{Path: out, DisableOptimization: true})
	if err != nil {
		t.Fatalf("reloading the optimized model: %v", err)
	}
	s.Close()
}

func BenchmarkRun(b *testing.B) {
	for _, m := range []string{"yolox_nano_416.onnx", "fastestdet_352.onnx", "ultraface_rfb_320.onnx"} {
		for _, threads := range []int{1, 2} {
			b.Run(strings.TrimSuffix(m, ".onnx")+"/threads="+string(rune('0'+threads)), func(b *testing.B) {
				s, err := Open(Config{Path: asset(b, "models/"+m), IntraOpThreads: threads})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				s.Run(1)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.Run(1); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/frame")
			})
		}
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func elements(s []int64) int64 {
	n := int64(1)
	for _, d := range s {
		n *= d
	}
	return n
}
