package ort

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unsafe"

	"github.com/vinfer/vinfer/internal/testutil"
)

func repoRoot(t testing.TB) string { return testutil.Root(t) }

func model(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(repoRoot(t), "assets", "models", name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%v: run scripts/setup.sh", err)
	}
	return p
}

// env loads the library (it is installed by scripts/setup.sh: a failure is a test failure).
func env(t testing.TB) *Env {
	t.Helper()
	e, err := SharedEnv()
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func options(t testing.TB) *SessionOptions {
	t.Helper()
	o, err := NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(o.Release)
	if err := o.SetIntraOpThreads(1); err != nil {
		t.Fatal(err)
	}
	return o
}

func TestLoadErrors(t *testing.T) {
	text := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(text, []byte("not a library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "nowhere", "libonnxruntime.so.1")
	_, err := loadFirst([]string{missing, text, "libm.so.6"})
	if err == nil {
		t.Fatal("loading non-ORT libraries succeeded")
	}
	msg := err.Error()
	for _, want := range []string{missing, "No such file", text, "libm.so.6: no symbol OrtGetApiBase",
		"scripts/setup.sh", LibraryEnv} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	t.Log(msg)
}

func TestLoad(t *testing.T) {
	env(t)
	if Loaded() == "" || !strings.HasPrefix(Version(), "1.") {
		t.Fatalf("loaded %q, version %q", Loaded(), Version())
	}
	if err := Load(""); err != nil {
		t.Errorf("second Load: %v", err)
	}
	if err := Load(Loaded()); err != nil {
		t.Errorf("Load of the loaded path: %v", err)
	}
	if err := Load("/elsewhere/libonnxruntime.so.1"); err == nil || !strings.Contains(err.Error(), "already loaded") {
		t.Errorf("Load of another path: %v", err)
	}
	t.Logf("ONNX Runtime %s from %s", Version(), Loaded())
}

func TestCandidates(t *testing.T) {
	t.Setenv(LibraryEnv, "/opt/ort/libonnxruntime.so.1")
	if c := Candidates(); !slices.Equal(c, []string{"/opt/ort/libonnxruntime.so.1"}) {
		t.Errorf("with %s: %v", LibraryEnv, c)
	}
	t.Setenv(LibraryEnv, "")
	c := Candidates()
	want := filepath.Join(repoRoot(t), "third_party", "ort", "lib", LibraryName)
	if !slices.Contains(c, want) || c[len(c)-1] != LibraryName {
		t.Errorf("candidates %v lack %s or the system loader's name last", c, want)
	}
}

func TestSessionInfo(t *testing.T) {
	s, err := NewSession(env(t), model(t, "ultraface_rfb_320.onnx"), options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	want := struct{ in, out []IOInfo }{
		[]IOInfo{{Name: "input", Type: Float32, Shape: []int64{1, 3, 240, 320}}},
		[]IOInfo{{Name: "scores", Type: Float32, Shape: []int64{1, 4420, 2}}, {Name: "boxes", Type: Float32, Shape: []int64{1, 4420, 4}}},
	}
	check := func(got, want []IOInfo) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		for i := range got {
			if got[i].Name != want[i].Name || got[i].Type != want[i].Type || !slices.Equal(got[i].Shape, want[i].Shape) ||
				len(got[i].Symbols) != len(got[i].Shape) {
				t.Errorf("got %+v, want %+v", got[i], want[i])
			}
		}
	}
	check(s.Inputs, want.in)
	check(s.Outputs, want.out)
	s.Release()
	s.Release() // idempotent
}

// yolox on a gray input, through Run with a preallocated output and with an empty output slot.
func TestRunPreallocatedAndORTAllocated(t *testing.T) {
	s, err := NewSession(env(t), model(t, "yolox_nano_416.onnx"), options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	mem, err := NewCPUMemoryInfo()
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Release()
	in, err := NewHostTensor(mem, Float32, []int64{1, 3, 416, 416})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Release()
	out, err := NewHostTensor(mem, Float32, []int64{1, 3549, 85})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	for i := range in.Float32() {
		in.Float32()[i] = 114
	}
	inNames, outNames := NewNames([]string{"images"}), NewNames([]string{"output"})
	defer inNames.Release()
	defer outNames.Release()
	ins, outs := NewValues(1), NewValues(1)
	defer ins.Release()
	defer outs.Release()
	ins.Set(0, &in.Value)
	outs.Set(0, &out.Value)
	if err := s.Run(inNames, ins, outNames, outs); err != nil {
		t.Fatal(err)
	}
	got := out.Float32()
	if len(got) != 3549*85 || finite(got) != len(got) || slices.Max(got) == 0 {
		t.Fatalf("output: %d values, %d finite", len(got), finite(got))
	}
	if a := testing.AllocsPerRun(3, func() { s.Run(inNames, ins, outNames, outs) }); a != 0 {
		t.Errorf("Run: %v Go allocations", a)
	}

	// An empty output slot: ONNX Runtime allocates the value; the array owns it.
	outs.Set(0, nil)
	if err := s.Run(inNames, ins, outNames, outs); err != nil {
		t.Fatal(err)
	}
	v := outs.At(0)
	shape, err := v.Shape(make([]int64, 0, 3))
	if err != nil || !slices.Equal(shape, []int64{1, 3549, 85}) {
		t.Fatalf("ORT-allocated output shape %v, %v", shape, err)
	}
	if typ, err := v.ElementType(); err != nil || typ != Float32 {
		t.Fatalf("element type %d, %v", typ, err)
	}
	p, err := v.Data()
	if err != nil || p == nil {
		t.Fatal(p, err)
	}
	ortOut := unsafeFloats(p, len(got))
	if !slices.Equal(ortOut, got) {
		t.Error("ORT-allocated output differs from the preallocated one")
	}
	outs.ReleaseAt(0)
	if !outs.At(0).IsNil() {
		t.Error("slot not emptied")
	}
	if a := testing.AllocsPerRun(3, func() {
		s.Run(inNames, ins, outNames, outs)
		outs.At(0).Shape(shape)
		outs.ReleaseAt(0)
	}); a != 0 {
		t.Errorf("Run into an empty slot: %v Go allocations", a)
	}

	// Name/value count mismatch is caught before calling ORT.
	none := NewNames(nil)
	defer none.Release()
	if err := s.Run(inNames, ins, none, outs); err == nil {
		t.Error("mismatched output names accepted")
	}
}

func TestSessionFromMmap(t *testing.T) {
	f, err := os.Open(model(t, "fastestdet_352.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	data, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSessionFromBytes(env(t), data, options(t))
	if err := syscall.Munmap(data); err != nil { // ORT keeps no reference to the bytes
		t.Fatal(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	if len(s.Outputs) != 1 || s.Outputs[0].Name != "758" || !slices.Equal(s.Outputs[0].Shape, []int64{1, 85, 22, 22}) {
		t.Errorf("outputs %+v", s.Outputs)
	}
}

func TestNotONNX(t *testing.T) {
	p := filepath.Join(t.TempDir(), "model.onnx")
	if err := os.WriteFile(p, []byte("this is a text file, not an ONNX model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewSession(env(t), p, options(t))
	var oe *Error
	if !errors.As(err, &oe) || oe.Code != CodeInvalidProtobuf || !strings.Contains(oe.Message, "rotobuf") ||
		!strings.Contains(err.Error(), "CreateSession") || !strings.Contains(oe.Message, p) {
		t.Fatalf("err = %v", err)
	}
	_, err = NewSessionFromBytes(env(t), []byte("junk"), options(t))
	if !errors.As(err, &oe) || oe.Op != "CreateSessionFromArray" {
		t.Fatalf("from bytes: %v", err)
	}
	if _, err := NewSessionFromBytes(env(t), nil, options(t)); err == nil {
		t.Fatal("empty model accepted")
	}
	t.Log(err)
}

func TestIoBinding(t *testing.T) {
	s, err := NewSession(env(t), model(t, "ultraface_rfb_320.onnx"), options(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release()
	mem, _ := NewCPUMemoryInfo()
	defer mem.Release()
	in, _ := NewHostTensor(mem, Float32, []int64{1, 3, 240, 320})
	defer in.Release()
	scores, _ := NewHostTensor(mem, Float32, []int64{1, 4420, 2})
	defer scores.Release()
	b, err := s.NewIoBinding()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if err := b.BindInput("input", &in.Value); err != nil {
		t.Fatal(err)
	}
	if err := b.BindOutput("scores", &scores.Value); err != nil {
		t.Fatal(err)
	}
	if err := b.BindOutputToDevice("boxes", mem); err != nil {
		t.Fatal(err)
	}
	if err := b.Run(); err != nil {
		t.Fatal(err)
	}
	if err := b.SynchronizeOutputs(); err != nil {
		t.Fatal(err)
	}
	// Softmax rows: background + face = 1.
	sc := scores.Float32()
	if math.Abs(float64(sc[0]+sc[1])-1) > 1e-4 {
		t.Errorf("scores row 0 = %v %v", sc[0], sc[1])
	}
	outs, err := b.Outputs()
	if err != nil || len(outs) != 2 {
		t.Fatalf("bound outputs %d, %v", len(outs), err)
	}
	for _, v := range outs {
		defer v.Release()
	}
	if shape, _ := outs[1].Shape(nil); !slices.Equal(shape, []int64{1, 4420, 4}) {
		t.Errorf("boxes shape %v", shape)
	}
	if a := testing.AllocsPerRun(3, func() { b.Run() }); a != 0 {
		t.Errorf("RunWithBinding: %v Go allocations", a)
	}
	ro, err := NewRunOptions(RunDisableSyncProviders, "1")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Release()
	clear(sc)
	if err := b.RunWith(ro); err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(sc[0]+sc[1])-1) > 1e-4 {
		t.Errorf("RunWith: scores row 0 = %v %v", sc[0], sc[1])
	}
	if a := testing.AllocsPerRun(3, func() { b.RunWith(ro) }); a != 0 {
		t.Errorf("RunWith: %v Go allocations", a)
	}
	if err := ro.Set(RunGraphID, "x"); err != nil {
		t.Errorf("Set: %v", err)
	}
	ro.Release()
	ro.Release()
	if err := b.BindInput("nope", &in.Value); err == nil || !strings.Contains(err.Error(), "BindInput nope") {
		t.Errorf("binding an unknown input: %v", err)
	}
	b.ClearOutputs()
	b.ClearInputs()
	if err := b.Run(); err == nil {
		t.Error("run with nothing bound succeeded")
	}
	b.Release()
	b.Release()
}

func TestExecutionProviders(t *testing.T) {
	e := env(t)
	devs, err := e.EpDevices()
	if err != nil {
		t.Fatal(err)
	}
	var cpu []EpDevice
	for _, d := range devs {
		t.Logf("EP device %s (%s) on %s %s vendor 0x%x device 0x%x", d.EpName, d.EpVendor, d.Device.Type,
			d.Device.Vendor, d.Device.VendorID, d.Device.DeviceID)
		if d.EpName == "CPUExecutionProvider" {
			cpu = append(cpu, d)
		}
	}
	if len(cpu) == 0 || cpu[0].Device.Type != "cpu" {
		t.Fatalf("no CPUExecutionProvider device among %+v", devs)
	}
	o := options(t)
	if err := o.AppendExecutionProvider(e, cpu[:1], map[string]string{}); err != nil {
		t.Fatal(err)
	}
	s, err := NewSession(e, model(t, "fastestdet_352.onnx"), o)
	if err != nil {
		t.Fatal(err)
	}
	s.Release()
	if err := o.AppendExecutionProvider(e, nil, nil); err == nil {
		t.Error("no device accepted")
	}
	bogus := filepath.Join(t.TempDir(), "libonnxruntime_providers_cuda_plugin.so")
	if err := e.RegisterExecutionProviderLibrary("cuda", bogus); err == nil || !strings.Contains(err.Error(), bogus) {
		t.Errorf("registering a missing EP library: %v", err)
	}
}

func TestMemoryInfoAndOptions(t *testing.T) {
	env(t)
	m, err := NewCUDAMemoryInfo(0) // a description only: valid without a GPU
	if err != nil {
		t.Fatal(err)
	}
	m.Release()
	m.Release()
	o := options(t)
	for _, err := range []error{
		o.SetInterOpThreads(2), o.SetParallelExecution(true), o.SetParallelExecution(false),
		o.SetGraphOptimization(OptExtended), o.AddConfigEntry("session.intra_op.allow_spinning", "0"),
		o.SetOptimizedModelPath(filepath.Join(t.TempDir(), "opt.onnx")),
	} {
		if err != nil {
			t.Error(err)
		}
	}
	if _, err := NewHostTensor(nil, Float32, []int64{1, 0}); err == nil {
		t.Error("zero dimension accepted")
	}
	if Alloc(0) != nil {
		t.Error("Alloc(0) not nil")
	}
}

func finite(v []float32) int {
	n := 0
	for _, x := range v {
		if !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) {
			n++
		}
	}
	return n
}

func unsafeFloats(p unsafe.Pointer, n int) []float32 { return unsafe.Slice((*float32)(p), n) }

// TestTelemetryOff: loading ONNX Runtime switches its usage telemetry off (unless the user set
// ORT_DISABLE_TELEMETRY themselves).
func TestTelemetryOff(t *testing.T) {
	if err := Load(""); err != nil {
		t.Skip(err)
	}
	if v := os.Getenv("ORT_DISABLE_TELEMETRY"); v == "" {
		t.Fatal("ORT_DISABLE_TELEMETRY not set")
	}
}
