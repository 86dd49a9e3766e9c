package model_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/model"
)

func iou(a, b [4]float32) float64 {
	x1, y1 := max(a[0], b[0]), max(a[1], b[1])
	x2, y2 := min(a[2], b[2]), min(a[3], b[3])
	in := float64(max(0, x2-x1) * max(0, y2-y1))
	u := float64((a[2]-a[0])*(a[3]-a[1])+(b[2]-b[0])*(b[3]-b[1])) - in
	return in / u
}

// sameDetections fails unless got has want's detections: same labels, score within 0.02,
// boxes at IoU ≥ 0.9.
func sameDetections(t *testing.T, what string, want, got []detect.Detection) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d detections, float32 %d: %v vs %v", what, len(got), len(want), got, want)
	}
	for _, w := range want {
		ok := false
		for _, g := range got {
			if g.Label == w.Label && math.Abs(float64(g.Score-w.Score)) <= 0.02 && iou(g.Box, w.Box) >= 0.9 {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: float32's %s %.3f %v has no match in %v", what, w.Label, w.Score, w.Box, got)
		}
	}
}

// TestPrecisionFP16: YOLOX-Nano declared with precision: fp16 (on the CPU provider, which runs
// float16 graphs through Casts) loads its float16 rewrite, checked at load against float32,
// finds the float32 model's detections on the bundled stills, and a second load takes the
// rewrite from the cache directory.
func TestPrecisionFP16(t *testing.T) {
	dir := assets(t)
	cache := t.TempDir()
	var logs []string
	l := &model.Loader{CacheDir: cache, Logf: func(f string, a ...any) { logs = append(logs, f) }}
	decl := config.Model{Name: "yolox", Path: filepath.Join(dir, "models", "yolox_nano_416.onnx"), IntraOpThreads: 1}
	m32, err := l.Load(decl)
	if err != nil {
		t.Fatal(err)
	}
	defer m32.Close()
	if m32.Precision != model.PrecisionFP32 {
		t.Errorf("default precision %q", m32.Precision)
	}
	decl.Precision = config.PrecisionFP16
	m16, err := l.Load(decl)
	if err != nil {
		t.Fatal(err)
	}
	defer m16.Close()
	if !strings.HasPrefix(m16.Precision, "fp16 (checked: relative RMS error") {
		t.Fatalf("precision %q, want fp16 checked", m16.Precision)
	}
	t.Log(m16.Precision)
	for _, img := range []string{"dog.jpg", "person.jpg"} {
		p := filepath.Join(dir, "images", img)
		sameDetections(t, img, detectImage(t, m32, p), detectImage(t, m16, p))
	}
	files, _ := filepath.Glob(filepath.Join(cache, "yolox-*.fp16"))
	if len(files) != 1 {
		t.Fatalf("cache holds %v, want one .fp16 rewrite", files)
	}
	// The next load reads the rewrite from the cache: a rewrite made unreadable is noticed and
	// made again, never served.
	if err := os.WriteFile(files[0], []byte("vinfer-fp16-1\n\n\ngarbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	again, err := l.Load(decl)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if !strings.HasPrefix(again.Precision, "fp16") {
		t.Errorf("after a corrupt cache file: precision %q", again.Precision)
	}
}

// TestTensorRTRefused: provider: tensorrt is refused at load with what to use instead (no
// code path loads libnvinfer).
func TestTensorRTRefused(t *testing.T) {
	decl := config.Model{Name: "yolox", Path: filepath.Join(assets(t), "models", "yolox_nano_416.onnx"),
		Provider: config.ProviderTensorRT, IntraOpThreads: 1}
	m, err := model.Load(decl)
	if err == nil {
		m.Close()
		t.Fatal("provider tensorrt loaded")
	}
	if !strings.Contains(err.Error(), "does not load TensorRT (libnvinfer); use provider: cuda, with precision: fp16") {
		t.Errorf("error %v", err)
	}
}
