package model

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/model/onnxedit"
)

// TestPrecisionRefusesBrokenRewrite: a float16 rewrite whose outputs are not the float32
// model's (here: another model's rewrite) is refused at load with the reason, and the model
// serves float32; a model the rewrite refuses says why; auto times float32 against float16.
func TestPrecisionRefusesBrokenRewrite(t *testing.T) {
	root := testutil.Root(t)
	other, err := os.ReadFile(filepath.Join(root, "assets", "models", "fastestdet_352.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	saved := halfRewrite
	t.Cleanup(func() { halfRewrite = saved })
	halfRewrite = func([]byte, onnxedit.FP16Options) ([]byte, onnxedit.FP16Report, error) {
		return onnxedit.FP16(other, onnxedit.FP16Options{})
	}
	var logs []string
	l := &Loader{Logf: func(f string, a ...any) { logs = append(logs, f) }}
	decl := config.Model{Name: "yolox-broken", Path: filepath.Join(root, "assets", "models", "yolox_nano_416.onnx"),
		IntraOpThreads: 1, Precision: config.PrecisionFP16}
	m, err := l.Load(decl)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !strings.HasPrefix(m.Precision, "fp32 (float16 refused: the float16 rewrite differs from the float32 model") {
		t.Fatalf("precision %q", m.Precision)
	}
	t.Log(m.Precision)
	if _, err := m.Run(1); err != nil {
		t.Fatal(err)
	}

	halfRewrite = func([]byte, onnxedit.FP16Options) ([]byte, onnxedit.FP16Report, error) {
		return nil, onnxedit.FP16Report{}, &onnxedit.UnsupportedError{What: "cannot convert to float16", Reason: "test"}
	}
	decl.Name = "yolox-refused"
	m1, err := l.Load(decl)
	if err != nil {
		t.Fatal(err)
	}
	defer m1.Close()
	if m1.Precision != "fp32 (no float16 rewrite: cannot convert to float16: test)" {
		t.Errorf("refused rewrite: precision %q", m1.Precision)
	}

	halfRewrite = saved
	decl = config.Model{Name: "ultraface", Path: filepath.Join(root, "assets", "models", "ultraface_rfb_320.onnx"),
		IntraOpThreads: 1, Precision: config.PrecisionAuto}
	m2, err := l.Load(decl)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	t.Log(m2.Precision)
	if !strings.Contains(m2.Precision, "checked") || !strings.Contains(m2.Precision, "per batch of 1: fp32 ") {
		t.Errorf("auto: precision %q", m2.Precision)
	}
}
