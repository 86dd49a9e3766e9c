package model

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/model/onnxedit"
)

// TestPrecisionChecksDetections: the load check compares detections on real pictures. On the
// CPU provider, with the float16 rewrite emulated (float16 values, float32 arithmetic, as on a
// GPU), a rewrite that computes every layer in float16 (KeepFirst −1: it drops the float32
// first quarter) is refused with the detections that moved, though its raw outputs pass the
// relative RMS bound; the rewrite as made (the first quarter float32) is served, its
// detections matched.
func TestPrecisionChecksDetections(t *testing.T) {
	root := testutil.Root(t)
	saved := halfRewrite
	t.Cleanup(func() { halfRewrite = saved })
	for _, tc := range []struct {
		name string
		keep int
		want string
	}{
		{"yolox-all-layers", -1, "fp32 (float16 refused: the float16 rewrite differs from the float32 model: detections (score ≥ 0.1) on the probe pictures"},
		{"yolox-kept", 0, "fp16 (checked: relative RMS error"},
	} {
		halfRewrite = func(b []byte, o onnxedit.FP16Options) ([]byte, onnxedit.FP16Report, error) {
			o.Emulate, o.KeepFirst = true, tc.keep
			return onnxedit.FP16(b, o)
		}
		l := &Loader{Logf: t.Logf}
		m, err := l.Load(config.Model{Name: tc.name, Path: filepath.Join(root, "assets", "models", "yolox_nano_416.onnx"),
			IntraOpThreads: 1, Precision: config.PrecisionFP16})
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
		t.Logf("%s: %s", tc.name, m.Precision)
		if !strings.HasPrefix(m.Precision, tc.want) {
			t.Errorf("%s: precision %q, want %q…", tc.name, m.Precision, tc.want)
		}
		if tc.keep == 0 && !strings.Contains(m.Precision, "detections (score ≥ 0.1) matched") {
			t.Errorf("%s: precision %q: no detection check", tc.name, m.Precision)
		}
	}
}
