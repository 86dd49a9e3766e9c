package onnxedit

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/detect"
)

func TestFloat16(t *testing.T) {
	for _, tc := range []struct {
		f       float32
		h       uint16
		clamped bool
	}{
		{0, 0, false}, {1, 0x3c00, false}, {-2, 0xc000, false}, {0.1, 0x2e66, false},
		{65504, 0x7bff, false}, {65519, 0x7bff, true}, {1e6, 0x7bff, true}, {-1e6, 0xfbff, true},
		{float32(math.Inf(1)), 0x7c00, false}, {1 + 1.0/2048, 0x3c00, false}, {1 + 3.0/2048, 0x3c02, false},
		{1.0 / (1 << 24), 0x0001, false}, {1.0 / (1 << 26), 0, false}, {1.0 / (1 << 14), 0x0400, false},
		{3.0 / (1 << 25), 0x0002, false}, // 1.5 ulp of the smallest subnormal rounds to even
	} {
		h, c := Float16(tc.f)
		if h != tc.h || c != tc.clamped {
			t.Errorf("Float16(%g) = %#04x, %v; want %#04x, %v", tc.f, h, c, tc.h, tc.clamped)
		}
	}
	if h, _ := Float16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("NaN gives %#04x", h)
	}
	for h := range 1 << 16 {
		if exp := h >> 10 & 0x1f; exp == 0x1f {
			continue
		}
		if back, _ := Float16(Float32(uint16(h))); back != uint16(h) {
			t.Fatalf("%#04x → %g → %#04x", h, Float32(uint16(h)), back)
		}
	}
}

// halfStructure checks a float16 rewrite's graph: float32 input and outputs, every Conv,
// MatMul and Gemm but the first rep.First reading float16 weights, float initializers read by
// float32 nodes only.
func halfStructure(t *testing.T, b []byte, rep FP16Report) {
	t.Helper()
	m, err := parse(b)
	if err != nil {
		t.Fatal(err)
	}
	gb, _ := m.bytesField(modelGraph)
	g, err := parseGraph(gb)
	if err != nil {
		t.Fatal(err)
	}
	if g.inShape.elem != dtypeFloat {
		t.Errorf("input %s has type %d, want float", g.input, g.inShape.elem)
	}
	for _, vb := range g.msg.messages(graphOutput) {
		if name, s, _, _ := valueShape(vb); s.elem != dtypeFloat {
			t.Errorf("output %s has type %d, want float", name, s.elem)
		}
	}
	first := map[*node]bool{}
	for _, n := range g.nodes {
		if heavy[n.op] && len(first) < rep.First {
			first[n] = true
		}
	}
	halves, floats := 0, 0
	for name, init := range g.inits {
		switch dt, _ := init.varint(tensorDataType); dt {
		case dtypeFloat16:
			halves++
		case dtypeFloat:
			floats++
			for _, u := range g.users[name] {
				if heavy[u.n.op] && !first[u.n] {
					t.Errorf("float32 initializer %s is read by %s %s", name, u.n.op, u.n.name)
				}
			}
		}
	}
	for _, n := range g.nodes {
		if heavy[n.op] && len(n.inputs) > 1 && !first[n] {
			if w, ok := g.inits[n.inputs[1]]; !ok {
				t.Errorf("%s %s: weights %s are not an initializer", n.op, n.name, n.inputs[1])
			} else if dt, _ := w.varint(tensorDataType); dt != dtypeFloat16 {
				t.Errorf("%s %s: weights %s of type %d", n.op, n.name, n.inputs[1], dt)
			}
		}
	}
	if halves == 0 || halves > rep.Initializers || floats > rep.Kept {
		t.Errorf("%d float16 and %d float initializers; report %+v", halves, floats, rep)
	}
}

// TestFP16Models: the bundled models' float16 rewrites have that structure, load and run on
// ONNX Runtime's CPU provider (which computes float16 operators it lacks through Casts), and
// give the float32 outputs within 3 % relative RMS error on two bundled stills.
func TestFP16Models(t *testing.T) {
	for _, tc := range []struct {
		file string
		fam  detect.Family
		w, h int
	}{
		{"yolox_nano_416.onnx", detect.FamilyYOLOX, 416, 416},
		{"ultraface_rfb_320.onnx", detect.FamilyUltraFace, 320, 240},
		{"fastestdet_352.onnx", detect.FamilyFastestDet, 352, 352},
	} {
		orig := readModel(t, tc.file)
		if tc.fam == detect.FamilyYOLOX { // as vinfer loads it: dynamic batch, Focus as a Conv
			var err error
			if orig, _, err = Rewrite(orig, Options{FocusConv: true}); err != nil {
				t.Fatal(err)
			}
		}
		half, rep, err := FP16(orig, FP16Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		t.Logf("%s: %s", tc.file, rep)
		halfStructure(t, half, rep)
		if len(half) > len(orig)*6/10 {
			t.Errorf("%s: %d bytes, the original %d: weights not halved", tc.file, len(half), len(orig))
		}
		imgs := images(t, tc.fam, tc.w, tc.h)[:2]
		a, b := open(t, "fp32", orig, 1), open(t, "fp16", half, 1)
		for i, img := range imgs {
			want, got := run(t, a, [][]float32{img})[0], run(t, b, [][]float32{img})[0]
			worst, se, ss := 0.0, 0.0, 0.0
			for j := range want {
				d := float64(got[j] - want[j])
				worst, se, ss = max(worst, math.Abs(d)), se+d*d, ss+float64(want[j])*float64(want[j])
			}
			rms := math.Sqrt(se / ss)
			if !(rms < 0.03) { // YOLOX-Nano: 1.3 %, from its weights' rounding alone
				t.Errorf("%s: image %d: relative RMS error %.3g", tc.file, i, rms)
			}
			t.Logf("%s: image %d: max |Δ| %.4g, relative RMS error %.3g", tc.file, i, worst, rms)
		}
	}
}

// TestFP16Refused: a graph without Conv/MatMul/Gemm, an operator of another domain and a
// second pass are refused with the reason.
func TestFP16Refused(t *testing.T) {
	_, _, err := FP16(tinyModel(false), FP16Options{})
	var ue *UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "cannot convert to float16: no Conv") {
		t.Errorf("tiny: %v", err)
	}
	half, _, err := FP16(readModel(t, "ultraface_rfb_320.onnx"), FP16Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := FP16(half, FP16Options{}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "float16 already") {
		t.Errorf("second pass: %v", err)
	}
	if _, _, err := FP16([]byte("not a model"), FP16Options{}); !errors.Is(err, ErrNotONNX) {
		t.Errorf("garbage: %v", err)
	}
}

// TestFP16HalfInput: with HalfInput the image input is float16 and no Cast reads it; where
// the first layers stay float32 (the default) a float16 input is refused.
func TestFP16HalfInput(t *testing.T) {
	orig := readModel(t, "yolox_nano_416.onnx")
	var ue *UnsupportedError
	if _, _, err := FP16(orig, FP16Options{HalfInput: true}); !errors.As(err, &ue) || !strings.Contains(err.Error(), "kept float32") {
		t.Errorf("float16 input with the first layers float32: %v", err)
	}
	_, rep32, err := FP16(orig, FP16Options{KeepFirst: -1})
	if err != nil {
		t.Fatal(err)
	}
	half, rep16, err := FP16(orig, FP16Options{HalfInput: true, KeepFirst: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep16.Casts != rep32.Casts-1 {
		t.Errorf("%d Casts with a float16 input, %d without", rep16.Casts, rep32.Casts)
	}
	m, _ := parse(half)
	gb, _ := m.bytesField(modelGraph)
	g, err := parseGraph(gb)
	if err != nil {
		t.Fatal(err)
	}
	if g.inShape.elem != dtypeFloat16 {
		t.Errorf("input type %d, want float16", g.inShape.elem)
	}
	for _, u := range g.users[g.input] {
		if u.n.op == "Cast" {
			t.Errorf("Cast %s reads the float16 input", u.n.name)
		}
	}
}

// convModel is x [1,3,8,8] → Mul by k → Conv 1×1 (4 filters of weights w, −w, w) → y
// [1,4,8,8].
func convModel(k, w float32) []byte {
	wt := make([]float32, 4*3)
	for i := range wt {
		wt[i] = w
		if i%3 == 1 {
			wt[i] = -w
		}
	}
	var g message
	for _, n := range [][]byte{
		tNode("Mul", "scale", []string{"x", "k"}, []string{"xk"}),
		tNode("Conv", "conv", []string{"xk", "w"}, []string{"y"}),
	} {
		g = append(g, bytesFieldOf(graphNode, n))
	}
	g = append(g, strField(2, "conv"), bytesFieldOf(graphInitializer, floatTensor("k", nil, []float32{k})),
		bytesFieldOf(graphInitializer, floatTensor("w", []int64{4, 3, 1, 1}, wt)),
		bytesFieldOf(graphInput, tValue("x", 1, 3, 8, 8)), bytesFieldOf(graphOutput, tValue("y", 1, 4, 8, 8)))
	opset := message{strField(opsetDomain, ""), varintField(opsetVersion, 13)}
	return message{varintField(modelIRVersion, 7), bytesFieldOf(modelGraph, g.marshal()),
		bytesFieldOf(modelOpset, opset.marshal())}.marshal()
}

// TestFP16Clamped: a weight beyond float16's range is clamped to 65504 and counted, and the
// rewrite's output differs from float32's, which is why vinfer checks the rewrite against
// float32 at load (model/precision.go).
func TestFP16Clamped(t *testing.T) {
	orig := convModel(1e6, 1e-4)
	half, rep, err := FP16(orig, FP16Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Initializers != 2 || rep.Half != 2 || rep.Clamped != 1 || rep.Casts != 2 {
		t.Errorf("report %+v, want the Mul and the Conv in float16 with both tensors, k clamped, 2 Casts", rep)
	}
	img := make([]float32, 3*8*8)
	for i := range img {
		img[i] = 1
	}
	want := run(t, open(t, "fp32", orig, 1), [][]float32{img})[0]
	got := run(t, open(t, "fp16", half, 1), [][]float32{img})[0]
	// fp32: 1e6·1e-4 = 100; fp16: 65504·1e-4 = 6.55.
	if math.Abs(float64(want[0])-100) > 1e-3 || math.Abs(float64(got[0])-6.55) > 0.01 {
		t.Errorf("fp32 %g, fp16 %g; want 100 and 6.55 (k clamped)", want[0], got[0])
	}
}

func FuzzFP16(f *testing.F) {
	f.Add(tinyModel(false))
	f.Add(convModel(2, 0.5))
	f.Fuzz(func(t *testing.T, b []byte) {
		out, _, err := FP16(b, FP16Options{HalfInput: len(b)%2 == 0})
		if err != nil {
			var ue *UnsupportedError
			if !errors.Is(err, ErrNotONNX) && !errors.As(err, &ue) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		if _, _, err := FP16(out, FP16Options{}); err == nil {
			t.Fatalf("a float16 model converts again")
		}
	})
}

// BenchmarkFP16: the float16 rewrite of YOLOX-Nano (3.7 MB, 0.9 M weights), what a load pays
// once per model file before the rewrite is cached.
//
//	go test -run XXX -bench FP16 -benchtime 20x ./model/onnxedit/
func BenchmarkFP16(b *testing.B) {
	orig := readModel(b, "yolox_nano_416.onnx")
	b.SetBytes(int64(len(orig)))
	for b.Loop() {
		if _, _, err := FP16(orig, FP16Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFP16Emulate: the emulated rewrite keeps every tensor float32 but rounds what float16
// would hold: x·k with k = 1 + 2⁻¹² (between float16's 1 and 1 + 2⁻¹⁰) gives 1 exactly where
// float32 gives 1.000244, on the CPU provider with its graph optimizations on (they keep the
// Cast pairs).
func TestFP16Emulate(t *testing.T) {
	orig := convModel(1+1.0/4096, 1)
	emu, rep, err := FP16(orig, FP16Options{Emulate: true, HalfInput: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	m, _ := parse(emu)
	gb, _ := m.bytesField(modelGraph)
	g, err := parseGraph(gb)
	if err != nil {
		t.Fatal(err)
	}
	if g.inShape.elem != dtypeFloat {
		t.Errorf("input type %d, want float (HalfInput is ignored)", g.inShape.elem)
	}
	for name, init := range g.inits {
		if dt, _ := init.varint(tensorDataType); dt != dtypeFloat {
			t.Errorf("initializer %s of type %d, want float", name, dt)
		}
	}
	img := make([]float32, 3*8*8)
	for i := range img {
		img[i] = 1
	}
	want := run(t, open(t, "fp32", orig, 1), [][]float32{img})[0]
	got := run(t, open(t, "emulated", emu, 1), [][]float32{img})[0]
	if want[0] != 1+1.0/4096 || got[0] != 1 {
		t.Errorf("fp32 %.7g, emulated fp16 %.7g; want 1.000244 and 1", want[0], got[0])
	}
}
