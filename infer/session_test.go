package infer

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/internal/ort"
	"github.com/vinfer/vinfer/tensor"
)

func repoRoot(t testing.TB) string { return testutil.Root(t) }

// modelPath returns a bundled model; the assets are installed by scripts/setup.sh, so a
// missing one fails the test.
func modelPath(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "assets", "models", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: run scripts/setup.sh", err)
	}
	return p
}

// bundled lists the bundled models' I/O per assets/MANIFEST.md.
var bundled = []struct {
	file    string
	input   tensor.Info
	outputs []tensor.Info
}{
	{"yolox_nano_416.onnx", tensor.Info{Name: "images", Shape: []int64{1, 3, 416, 416}, Type: "float32"},
		[]tensor.Info{{Name: "output", Shape: []int64{1, 3549, 85}, Type: "float32"}}},
	{"fastestdet_352.onnx", tensor.Info{Name: "input.1", Shape: []int64{1, 3, 352, 352}, Type: "float32"},
		[]tensor.Info{{Name: "758", Shape: []int64{1, 85, 22, 22}, Type: "float32"}}},
	{"ultraface_rfb_320.onnx", tensor.Info{Name: "input", Shape: []int64{1, 3, 240, 320}, Type: "float32"},
		[]tensor.Info{{Name: "scores", Shape: []int64{1, 4420, 2}, Type: "float32"},
			{Name: "boxes", Shape: []int64{1, 4420, 4}, Type: "float32"}}},
}

func sameInfo(a, b tensor.Info) bool {
	return a.Name == b.Name && a.Type == b.Type && slices.Equal(a.Shape, b.Shape)
}

func TestBundledModels(t *testing.T) {
	for _, tc := range bundled {
		t.Run(tc.file, func(t *testing.T) {
			s, err := Open(Config{Path: modelPath(t, tc.file), IntraOpThreads: 1, MaxBatch: 8})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if in := s.Inputs(); len(in) != 1 || !sameInfo(in[0], tc.input) {
				t.Errorf("inputs %+v, want %+v", in, tc.input)
			}
			if w, h := s.InputSize(); w != int(tc.input.Shape[3]) || h != int(tc.input.Shape[2]) {
				t.Errorf("input size %dx%d", w, h)
			}
			if s.ModelBatch() != 1 || s.MaxBatch() != 1 {
				t.Errorf("model batch %d, max batch %d; want 1, 1 (fixed batch)", s.ModelBatch(), s.MaxBatch())
			}
			if len(s.Outputs()) != len(tc.outputs) {
				t.Fatalf("outputs %+v", s.Outputs())
			}
			for i, o := range s.Outputs() {
				if !sameInfo(o, tc.outputs[i]) {
					t.Errorf("output %d: %+v, want %+v", i, o, tc.outputs[i])
				}
			}
			in, err := s.Input(1)
			if err != nil || len(in) != int(tensor.Elements(tc.input.Shape)) {
				t.Fatalf("Input(1): %d elements, %v", len(in), err)
			}
			outs, err := s.Run(1)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range outs {
				if !sameInfo(o.Info, tc.outputs[i]) || len(o.Data) != int(tensor.Elements(tc.outputs[i].Shape)) {
					t.Errorf("run output %s: shape %v, %d values", o.Name, o.Shape, len(o.Data))
				}
				if n := nonFinite(o.Data); n > 0 {
					t.Errorf("output %s: %d non-finite values", o.Name, n)
				}
			}
			if _, err := s.Input(2); err == nil {
				t.Error("Input(2) of a fixed-batch model")
			}
			if _, err := s.Run(2); err == nil || !strings.Contains(err.Error(), "fixed at 1") {
				t.Errorf("Run(2): %v", err)
			}
			if a := testing.AllocsPerRun(10, func() {
				if _, err := s.Run(1); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Errorf("%v Go allocations per steady-state Run", a)
			}
		})
	}
}

// TestYOLOXZero runs YOLOX-Nano on an all-zero image: output [1,3549,85], objectness and class
// scores (sigmoid applied in the graph) within 0…1.
func TestYOLOXZero(t *testing.T) {
	s, err := Open(Config{Path: modelPath(t, "yolox_nano_416.onnx"), IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	in, err := s.Input(1)
	if err != nil {
		t.Fatal(err)
	}
	clear(in)
	outs, err := s.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	o := outs[0]
	if o.Name != "output" || !slices.Equal(o.Shape, []int64{1, 3549, 85}) || len(o.Data) != 3549*85 {
		t.Fatalf("output %s %v (%d values)", o.Name, o.Shape, len(o.Data))
	}
	for row := range 3549 {
		for _, v := range o.Data[row*85+4 : row*85+85] {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("row %d: score %v outside 0…1", row, v)
			}
		}
	}
}

// TestMmapModel opens a model from mmap'ed bytes, unmaps them, and runs it.
func TestMmapModel(t *testing.T) {
	f, err := os.Open(modelPath(t, "ultraface_rfb_320.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{Path: f.Name(), Model: data, IntraOpThreads: 1})
	if uerr := syscall.Munmap(data); uerr != nil {
		t.Fatal(uerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	outs, err := s.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	// Softmax over (background, face): each row sums to 1.
	if sc := outs[0].Data; math.Abs(float64(sc[0]+sc[1])-1) > 1e-4 {
		t.Errorf("scores row 0: %v %v", sc[0], sc[1])
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(text, []byte("this is a text file, not an ONNX model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(Config{Path: text})
	var oe *ort.Error
	if !errors.As(err, &oe) || oe.Code != ort.CodeInvalidProtobuf || !strings.Contains(err.Error(), "not a valid ONNX model") || !strings.Contains(err.Error(), "Protobuf parsing failed") ||
		!strings.Contains(err.Error(), text) {
		t.Errorf("text file: %v", err)
	}
	t.Log(err)
	if _, err := Open(Config{Model: []byte("junk"), Path: "junk.onnx"}); !errors.As(err, &oe) || !strings.Contains(err.Error(), "junk.onnx") {
		t.Errorf("junk bytes: %v", err)
	}
	missing := filepath.Join(dir, "missing.onnx")
	if _, err := Open(Config{Path: missing}); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := Open(Config{}); err == nil {
		t.Error("empty config accepted")
	}
	yolox := modelPath(t, "yolox_nano_416.onnx")
	for _, p := range []string{ProviderCUDA, ProviderTensorRT} {
		if _, err := Open(Config{Path: yolox, Provider: p}); !errors.Is(err, ErrProviderUnavailable) {
			t.Errorf("provider %s: %v", p, err)
		} else {
			t.Log(err)
		}
	}
	if _, err := Open(Config{Path: yolox, Provider: "gpu"}); err == nil || !strings.Contains(err.Error(), "unknown execution provider") {
		t.Errorf("provider gpu: %v", err)
	}
	if _, err := Open(Config{Path: yolox, ConfigEntries: map[string]string{"": "x"}}); err == nil {
		t.Error("empty config key accepted")
	}
}

// TestRegisterProvider checks that a registered provider function runs on the options (here the
// CPU execution provider appended through SessionOptionsAppendExecutionProvider_V2).
func TestRegisterProvider(t *testing.T) {
	called := false
	RegisterProvider("test-cpu-v2", func(env *ort.Env, opts *ort.SessionOptions, cfg *Config) error {
		called = true
		devs, err := env.EpDevices()
		if err != nil {
			return err
		}
		for _, d := range devs {
			if d.EpName == "CPUExecutionProvider" {
				return opts.AppendExecutionProvider(env, []ort.EpDevice{d}, cfg.ProviderOptions)
			}
		}
		return errors.New("no CPU EP device")
	})
	s, err := Open(Config{Path: modelPath(t, "fastestdet_352.onnx"), Provider: "test-cpu-v2", IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !called {
		t.Error("provider function not called")
	}
	if _, err := s.Run(1); err != nil {
		t.Fatal(err)
	}
}

// TestMissingLibrary runs this test binary again with VINFER_ORT_LIB pointing nowhere: Open
// must fail saying what was tried and how to fix it.
func TestMissingLibrary(t *testing.T) {
	const child = "VINFER_TEST_MISSING_LIB"
	if os.Getenv(child) != "" {
		_, err := Open(Config{Path: modelPath(t, "yolox_nano_416.onnx")})
		if err == nil {
			t.Fatal("Open succeeded without a library")
		}
		fmt.Printf("OPEN ERROR: %v\n", err)
		return
	}
	lib := filepath.Join(t.TempDir(), "nowhere", "libonnxruntime.so.1")
	cmd := exec.Command(os.Args[0], "-test.run=^TestMissingLibrary$", "-test.count=1")
	cmd.Env = append(os.Environ(), child+"=1", ort.LibraryEnv+"="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, want := range []string{"OPEN ERROR: ", lib, "No such file", "scripts/setup.sh", ort.LibraryEnv} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

func TestOptimizedModelCache(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "yolox.opt.onnx")
	s, err := Open(Config{Path: modelPath(t, "yolox_nano_416.onnx"), IntraOpThreads: 1, OptimizedModelPath: cache})
	if err != nil {
		t.Fatal(err)
	}
	in, err := s.Input(1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = float32(i%251) / 2
	}
	outs, err := s.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Clone(outs[0].Data)
	s.Close()
	s.Close() // idempotent
	if _, err := s.Run(1); err == nil {
		t.Error("Run after Close succeeded")
	}
	if _, err := s.Input(1); err == nil {
		t.Error("Input after Close succeeded")
	}
	fi, err := os.Stat(cache)
	if err != nil || fi.Size() == 0 {
		t.Fatalf("optimized model not written: %v", err)
	}
	s, err = Open(Config{Path: cache, IntraOpThreads: 1, DisableOptimization: true})
	if err != nil {
		t.Fatalf("opening the optimized model: %v", err)
	}
	defer s.Close()
	if in, err = s.Input(1); err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = float32(i%251) / 2
	}
	outs, err = s.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range outs[0].Data {
		if math.Abs(float64(v-want[i])) > 1e-3*(1+math.Abs(float64(want[i]))) {
			t.Fatalf("value %d: %v from the cached model, %v from the original", i, v, want[i])
		}
	}
}

// tinyModel writes, with /usr/bin/python3 and python3-onnx, a model with a dynamic batch:
// x [N,3,8,8] → y = 2x [N,3,8,8], s = Σx per image [N], pos = the positive values of x [P]
// (a data-dependent length).
func tinyModel(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import onnx").Run(); err != nil {
		t.Skipf("%s with the onnx module is needed to generate the model (apt-get install python3-onnx): %v", py, err)
	}
	path := filepath.Join(t.TempDir(), "tiny_dynamic.onnx")
	script := `
import sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
f = TensorProto.FLOAT
nodes = [
    helper.make_node("Mul", ["x", "two"], ["y"]),
    helper.make_node("ReduceSum", ["x", "axes"], ["s"], keepdims=0),
    helper.make_node("Reshape", ["x", "flat"], ["xf"]),
    helper.make_node("Greater", ["xf", "zero"], ["c"]),
    helper.make_node("Compress", ["xf", "c"], ["pos"], axis=0),
]
inits = [
    numpy_helper.from_array(np.array(2, np.float32), "two"),
    numpy_helper.from_array(np.array([1, 2, 3], np.int64), "axes"),
    numpy_helper.from_array(np.array([-1], np.int64), "flat"),
    numpy_helper.from_array(np.array(0, np.float32), "zero"),
]
g = helper.make_graph(nodes, "tiny", [helper.make_tensor_value_info("x", f, ["N", 3, 8, 8])],
    [helper.make_tensor_value_info("y", f, ["N", 3, 8, 8]), helper.make_tensor_value_info("s", f, ["N"]),
     helper.make_tensor_value_info("pos", f, ["P"])], inits)
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, sys.argv[1])
`
	if out, err := exec.Command(py, "-c", script, path).CombinedOutput(); err != nil {
		t.Fatalf("generating the model: %v\n%s", err, out)
	}
	return path
}

func TestDynamicBatch(t *testing.T) {
	s, err := Open(Config{Path: tinyModel(t), IntraOpThreads: 1, MaxBatch: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.ModelBatch() != -1 || s.MaxBatch() != 8 || s.Inputs()[0].Shape[0] != -1 {
		t.Fatalf("model batch %d, max %d, input %v", s.ModelBatch(), s.MaxBatch(), s.Inputs()[0].Shape)
	}
	const item = 3 * 8 * 8
	for _, batch := range []int{1, 4, 8, 4} {
		in, err := s.Input(batch)
		if err != nil || len(in) != batch*item {
			t.Fatalf("Input(%d): %d elements, %v", batch, len(in), err)
		}
		for b := range batch {
			for i := range item {
				in[b*item+i] = float32(b + 1)
			}
		}
		in[0] = -1 // one non-positive value: pos has batch·item-1 values
		outs, err := s.Run(batch)
		if err != nil {
			t.Fatal(err)
		}
		y, sum, pos := outs[0], outs[1], outs[2]
		if !slices.Equal(y.Shape, []int64{int64(batch), 3, 8, 8}) || len(y.Data) != batch*item {
			t.Fatalf("batch %d: y %v (%d values)", batch, y.Shape, len(y.Data))
		}
		if !slices.Equal(sum.Shape, []int64{int64(batch)}) || !slices.Equal(pos.Shape, []int64{int64(batch*item - 1)}) ||
			len(pos.Data) != batch*item-1 {
			t.Fatalf("batch %d: s %v, pos %v (%d values)", batch, sum.Shape, pos.Shape, len(pos.Data))
		}
		for b := range batch {
			wantSum := float32(item * (b + 1))
			if b == 0 {
				wantSum = float32(item-1) - 1
			}
			if sum.Data[b] != wantSum || y.Data[b*item+1] != float32(2*(b+1)) {
				t.Errorf("batch %d image %d: s %v (want %v), y %v", batch, b, sum.Data[b], wantSum, y.Data[b*item+1])
			}
		}
		if pos.Data[len(pos.Data)-1] != float32(batch) {
			t.Errorf("batch %d: last positive %v", batch, pos.Data[len(pos.Data)-1])
		}
	}
	// The data-dependent output changes length from run to run.
	in, err := s.Input(4)
	if err != nil {
		t.Fatal(err)
	}
	clear(in)
	in[5] = 3
	outs, err := s.Run(4)
	if err != nil {
		t.Fatal(err)
	}
	if pos := outs[2]; !slices.Equal(pos.Shape, []int64{1}) || len(pos.Data) != 1 || pos.Data[0] != 3 {
		t.Errorf("pos %v %v", pos.Shape, pos.Data)
	}
	for _, batch := range []int{0, 9} {
		if _, err := s.Input(batch); err == nil {
			t.Errorf("Input(%d) outside 1…MaxBatch accepted", batch)
		}
	}
	if _, err := s.Run(9); err == nil || !strings.Contains(err.Error(), "outside 1…8") {
		t.Errorf("Run(9): %v", err)
	}
	for _, batch := range []int{1, 8} {
		if a := testing.AllocsPerRun(10, func() {
			if _, err := s.Run(batch); err != nil {
				t.Fatal(err)
			}
		}); a != 0 {
			t.Errorf("batch %d: %v Go allocations per steady-state Run", batch, a)
		}
	}
}

func nonFinite(v []float32) int {
	n := 0
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			n++
		}
	}
	return n
}

func benchmarkModel(b *testing.B, file string) {
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
			s, err := Open(Config{Path: modelPath(b, file), IntraOpThreads: threads})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			in, err := s.Input(1)
			if err != nil {
				b.Fatal(err)
			}
			for i := range in {
				in[i] = float32(i % 255)
			}
			for range 3 { // warm-up
				if _, err := s.Run(1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := s.Run(1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/frame")
		})
	}
}

// BenchmarkRunYOLOX measures YOLOX-Nano 416×416 inference, batch 1 (ms/frame).
func BenchmarkRunYOLOX(b *testing.B) { benchmarkModel(b, "yolox_nano_416.onnx") }

// BenchmarkRunFastestDet measures FastestDet 352×352 inference, batch 1 (ms/frame).
func BenchmarkRunFastestDet(b *testing.B) { benchmarkModel(b, "fastestdet_352.onnx") }

// BenchmarkRunUltraFace measures UltraFace RFB-320 (320×240) inference, batch 1 (ms/frame).
func BenchmarkRunUltraFace(b *testing.B) { benchmarkModel(b, "ultraface_rfb_320.onnx") }

// TestInputSetsOverlap: one goroutine writes the next batch into a free input set (the first
// write of each set allocates it) while another runs the set written before, as the
// pipeline's two-stage worker does; each run's outputs are those of its own set's input.
func TestInputSetsOverlap(t *testing.T) {
	s, err := Open(Config{Path: tinyModel(t), IntraOpThreads: 1, MaxBatch: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const item, rounds, batch = 3 * 8 * 8, 200, 3
	type staged struct{ set, v int }
	free, ready := make(chan int, 2), make(chan staged)
	free <- 1
	free <- 2
	go func() {
		defer close(ready)
		for v := 1; v <= rounds; v++ {
			set := <-free
			in, err := s.InputSet(set, batch)
			if err != nil {
				t.Error(err)
				return
			}
			for i := range in {
				in[i] = float32(v)
			}
			ready <- staged{set, v}
		}
	}()
	n := 0
	for st := range ready {
		outs, err := s.RunSet(st.set, batch)
		if err != nil {
			t.Fatal(err)
		}
		for b := range batch {
			if got, want := outs[1].Data[b], float32(item*st.v); got != want {
				t.Fatalf("round %d (set %d) image %d: sum %v, want %v", st.v, st.set, b, got, want)
			}
		}
		n++
		free <- st.set
	}
	if n != rounds {
		t.Fatalf("%d rounds of %d", n, rounds)
	}
	if _, err := s.RunSet(0, 1); err != nil { // set 0 is allocated at Open
		t.Errorf("RunSet(0): %v", err)
	}
	if _, err := s.InputSet(InputSets, 1); err == nil {
		t.Error("InputSet accepted a set past InputSets")
	}
}
