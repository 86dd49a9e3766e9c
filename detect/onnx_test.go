package detect_test

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/preprocess"
)

// generatedModel is one entry of the models.json that testdata/gen_models.py writes.
type generatedModel struct {
	File         string
	Family       detect.Family
	Width        int
	Height       int
	Outputs      []string
	DynamicBatch bool `json:"dynamic_batch"`
	Want         []struct {
		ClassID int `json:"class_id"`
		Score   float32
		Box     [4]float32
	}
}

// generateModels runs testdata/gen_models.py into a temporary directory.
func generateModels(t *testing.T) (string, []generatedModel) {
	t.Helper()
	const python = "/usr/bin/python3" // Debian's, with python3-onnx and python3-numpy
	if _, err := os.Stat(python); err != nil {
		t.Skipf("%s not installed: %v", python, err)
	}
	if out, err := exec.Command(python, "-c", "import onnx, numpy").CombinedOutput(); err != nil {
		t.Skipf("python3-onnx / python3-numpy not installed (apt-get install python3-onnx python3-numpy): %s", out)
	}
	dir := t.TempDir()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "testdata", "gen_models.py")
	if out, err := exec.Command(python, script, dir).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	var models []generatedModel
	if err := json.Unmarshal(b, &models); err != nil {
		t.Fatal(err)
	}
	return dir, models
}

// TestGeneratedExports runs ONNX models with the published output names and shapes of YOLOv5
// (decoded and raw heads), YOLOv8 (dynamic batch), NanoDet (Plus and legacy), YOLOv10 end2end
// (Ultralytics' top-k postprocess built into the graph) and PicoDet (per-level scores and
// distributions) through ONNX Runtime, recognises each family from the session's shapes, and
// decodes the planted detections.
func TestGeneratedExports(t *testing.T) {
	dir, models := generateModels(t)
	if len(models) < 7 {
		t.Fatalf("%d models generated", len(models))
	}
	for _, m := range models {
		t.Run(m.File, func(t *testing.T) {
			s, err := infer.Open(infer.Config{Path: filepath.Join(dir, m.File), IntraOpThreads: 1, MaxBatch: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			fam, err := detect.DetectFamily(s.Inputs(), s.Outputs())
			if err != nil || fam != m.Family {
				t.Fatalf("DetectFamily = %q, %v; want %q", fam, err, m.Family)
			}
			w, h, err := detect.InputSize(s.Inputs()[0])
			if err != nil || w != m.Width || h != m.Height {
				t.Fatalf("InputSize = %dx%d, %v", w, h, err)
			}
			p := detect.DefaultParams(fam)
			p.InputWidth, p.InputHeight = w, h
			dec, err := detect.NewDecoder(fam, s.Outputs(), p)
			if err != nil {
				t.Fatal(err)
			}

			batch := 1
			if m.DynamicBatch {
				batch = 2 // item 0 all ones (the planted detections), item 1 zeros (nothing)
			}
			in, err := s.Input(batch)
			if err != nil {
				t.Fatal(err)
			}
			slot := len(in) / batch
			for i := range in {
				in[i] = 0
			}
			for i := range in[:slot] {
				in[i] = 1
			}
			outs, err := s.Run(batch)
			if err != nil {
				t.Fatal(err)
			}
			got := dec.Decode(outs, 0, preprocess.Transform{}, nil)
			if len(got) != len(m.Want) {
				t.Fatalf("%d detections, want %d: %+v", len(got), len(m.Want), got)
			}
			for i, w := range m.Want {
				g := got[i]
				if g.ClassID != w.ClassID || g.Label != p.Labels[w.ClassID] || math.Abs(float64(g.Score-w.Score)) > 1e-4 {
					t.Errorf("detection %d: %+v, want %+v", i, g, w)
				}
				for k := range 4 {
					if math.Abs(float64(g.Box[k]-w.Box[k])) > 1e-3 {
						t.Errorf("detection %d: box %v, want %v", i, g.Box, w.Box)
						break
					}
				}
			}
			if batch == 2 {
				if n := len(dec.Decode(outs, 1, preprocess.Transform{}, nil)); n != 0 {
					t.Errorf("batch item 1 (zeros): %d detections", n)
				}
			}
			dst := got[:0]
			if a := testing.AllocsPerRun(5, func() { dst = dec.Decode(outs, 0, preprocess.Transform{}, dst[:0]) }); a != 0 {
				t.Errorf("%v allocations per Decode", a)
			}
		})
	}
}
