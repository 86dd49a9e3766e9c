package infer

import (
	"errors"
	"math"
	"os"
	"testing"
	"unsafe"

	"github.com/vinfer/vinfer/internal/ort"
	"github.com/vinfer/vinfer/model/onnxedit"
)

// TestBoundRunHalfInput: YOLOX-Nano's float16 rewrite (every layer: KeepFirst −1) with a
// float16 input (what the GPU preprocessing kernel feeds) runs through a bound run on float16
// input memory and gives what the float-input rewrite gives after its own Cast; the host path
// refuses it.
func TestBoundRunHalfInput(t *testing.T) {
	orig, err := os.ReadFile(modelPath(t, "yolox_nano_416.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	f32in, _, err := onnxedit.FP16(orig, onnxedit.FP16Options{KeepFirst: -1})
	if err != nil {
		t.Fatal(err)
	}
	f16in, _, err := onnxedit.FP16(orig, onnxedit.FP16Options{HalfInput: true, KeepFirst: -1})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Open(Config{Path: "float input", Model: f32in, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	in, err := ref.Input(1)
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i] = float32(i % 251)
	}
	outs, err := ref.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]float32(nil), outs[0].Data...)

	s, err := Open(Config{Path: "half input", Model: f16in, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !s.InputHalf() || s.Inputs()[0].Type != "float16" {
		t.Fatalf("InputHalf %v, input %+v", s.InputHalf(), s.Inputs()[0])
	}
	if _, err := s.Input(1); !errors.Is(err, ErrHalfInput) {
		t.Errorf("host Input: %v, want ErrHalfInput", err)
	}
	if _, err := s.Run(1); !errors.Is(err, ErrHalfInput) {
		t.Errorf("host Run: %v, want ErrHalfInput", err)
	}
	inBuf := ort.Alloc(2 * len(in))
	defer ort.Free(inBuf)
	h := unsafe.Slice((*uint16)(inBuf), len(in))
	for i, v := range in {
		h[i], _ = onnxedit.Float16(v)
	}
	outBuf := ort.Alloc(4 * len(want))
	defer ort.Free(outBuf)
	mem, err := ort.NewCPUMemoryInfo()
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.newBoundRun(mem, inBuf, []unsafe.Pointer{outBuf})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if err := r.Run(1); err != nil {
		t.Fatal(err)
	}
	got := unsafe.Slice((*float32)(outBuf), len(want))
	worst := 0.0
	for i := range want {
		worst = max(worst, math.Abs(float64(got[i]-want[i])))
	}
	if worst > 1e-3 {
		t.Errorf("float16 input differs from the float input's Cast by up to %g", worst)
	}
	t.Logf("max |Δ| %g", worst)
}
