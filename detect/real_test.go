package detect_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/imageio"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

func asset(t testing.TB, rel string) string { return testutil.Asset(t, rel) }

// reference is a detection verified with OpenCV DNN 4.6 (assets MANIFEST.md); a zero Box is
// not checked (the manifest gives only the score).
type reference struct {
	label string
	score float32
	box   [4]float32
}

// bundledModels are the shared models with their preprocessing (MANIFEST.md §1).
var bundledModels = map[string]preprocess.Spec{
	"yolox_nano_416.onnx": {Width: 416, Height: 416, Color: preprocess.BGR, Resize: preprocess.Letterbox,
		Align: preprocess.TopLeft, Pad: 114, Scale: 1, Std: [3]float32{1, 1, 1}},
	"fastestdet_352.onnx": {Width: 352, Height: 352, Color: preprocess.BGR, Resize: preprocess.Stretch,
		Interp: preprocess.Area, Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}},
	"ultraface_rfb_320.onnx": {Width: 320, Height: 240, Color: preprocess.RGB, Resize: preprocess.Stretch,
		Scale: 1, Mean: [3]float32{127, 127, 127}, Std: [3]float32{128, 128, 128}},
}

// TestBundledModels runs the three real models on the shared pictures — JPEG decode,
// preprocessing, ONNX Runtime, auto-detected family, decoder with the family defaults — and
// compares the highest-scored detections with the manifest's verified ones, in order: same
// classes, scores within 0.01, boxes within 3 px (the manifest lists the top detections,
// boxes truncated to integers, from OpenCV's JPEG decoder and resize). Weaker extra
// detections (the manifest's "…") are logged.
func TestBundledModels(t *testing.T) {
	for _, tc := range []struct {
		model, image string
		want         []reference
	}{
		{"yolox_nano_416.onnx", "dog.jpg", []reference{
			{"dog", 0.855, [4]float32{132, 206, 325, 543}},
			{"bicycle", 0.803, [4]float32{51, 137, 572, 423}},
			{"car", 0.798, [4]float32{466, 78, 692, 171}},
		}},
		{"yolox_nano_416.onnx", "person.jpg", []reference{
			{"person", 0.881, [4]float32{188, 96, 276, 371}}, {"dog", 0.872, [4]float32{}}, {"horse", 0.871, [4]float32{}},
		}},
		{"yolox_nano_416.onnx", "office_person_frame60s.jpg", []reference{{"person", 0.859, [4]float32{408, 0, 561, 397}}}},
		{"fastestdet_352.onnx", "dog.jpg", []reference{{"dog", 0.779, [4]float32{}}, {"car", 0.769, [4]float32{}}, {"bicycle", 0.740, [4]float32{}}}},
		{"fastestdet_352.onnx", "person.jpg", []reference{{"sheep", 0.923, [4]float32{}}, {"dog", 0.913, [4]float32{}}, {"person", 0.899, [4]float32{}}}},
		{"fastestdet_352.onnx", "office_person_frame60s.jpg", []reference{{"person", 0.905, [4]float32{}}}},
		{"ultraface_rfb_320.onnx", "office_face_frame690.jpg", []reference{{"face", 0.984, [4]float32{686, 31, 725, 83}}}},
	} {
		t.Run(tc.model+"/"+tc.image, func(t *testing.T) {
			got := runBundled(t, tc.model, tc.image)
			for _, d := range got {
				t.Logf("%s %.3f %.1f", d.Label, d.Score, d.Box)
			}
			if len(got) < len(tc.want) {
				t.Fatalf("%d detections, want at least %d", len(got), len(tc.want))
			}
			for i, w := range tc.want {
				if !matches(got[i], w) {
					t.Errorf("detection %d is %s %.3f %.1f, want %s %.3f %v", i, got[i].Label, got[i].Score, got[i].Box, w.label, w.score, w.box)
				}
			}
		})
	}
}

func matches(g detect.Detection, w reference) bool {
	if g.Label != w.label || math.Abs(float64(g.Score-w.score)) > 0.01 {
		return false
	}
	if w.box == ([4]float32{}) {
		return true
	}
	for k := range 4 {
		if math.Abs(float64(g.Box[k]-w.box[k])) > 3 {
			return false
		}
	}
	return true
}

func runBundled(t *testing.T, model, image string) []detect.Detection {
	t.Helper()
	r := openBundled(t, model, image, nil)
	defer r.close()
	return r.dec.Decode(r.outs, 0, r.tr, nil)
}

// bundledRun is a bundled model run once on a picture: its outputs, transform and a decoder.
type bundledRun struct {
	outs  []tensor.Tensor
	tr    preprocess.Transform
	dec   detect.Decoder
	close func()
}

// openBundled runs model on image; edit, when set, adjusts the family's default parameters.
func openBundled(t testing.TB, model, image string, edit func(*detect.Params)) bundledRun {
	t.Helper()
	spec := bundledModels[model]
	s, err := infer.Open(infer.Config{Path: asset(t, "models/"+model), IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	fail := func(err error) {
		s.Close()
		t.Fatal(err)
	}
	fam, err := detect.DetectFamily(s.Inputs(), s.Outputs())
	if err != nil {
		fail(err)
	}
	p := detect.DefaultParams(fam)
	if p.InputWidth, p.InputHeight, err = detect.InputSize(s.Inputs()[0]); err != nil {
		fail(err)
	}
	if p.InputWidth != spec.Width || p.InputHeight != spec.Height {
		fail(fmt.Errorf("model input %dx%d, spec %dx%d", p.InputWidth, p.InputHeight, spec.Width, spec.Height))
	}
	if edit != nil {
		edit(&p)
	}
	dec, err := detect.NewDecoder(fam, s.Outputs(), p)
	if err != nil {
		fail(err)
	}
	img, err := imageio.Load(asset(t, "images/"+image))
	if err != nil {
		fail(err)
	}
	pre, err := preprocess.NewCPU(spec)
	if err != nil {
		fail(err)
	}
	in, err := s.Input(1)
	if err != nil {
		fail(err)
	}
	tr, err := pre.Run(img, in)
	if err != nil {
		fail(err)
	}
	outs, err := s.Run(1)
	if err != nil {
		fail(err)
	}
	return bundledRun{outs: outs, tr: tr, dec: dec, close: s.Close}
}

// ExampleNewDecoder shows the set-up for a model whose family is recognised from its shapes.
func ExampleNewDecoder() {
	s, err := infer.Open(infer.Config{Path: "assets/models/yolox_nano_416.onnx"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	fam, err := detect.DetectFamily(s.Inputs(), s.Outputs())
	if err != nil {
		fmt.Println(err) // says to set family: in the model config
		return
	}
	p := detect.DefaultParams(fam) // thresholds and labels of the family
	p.InputWidth, p.InputHeight, _ = detect.InputSize(s.Inputs()[0])
	dec, err := detect.NewDecoder(fam, s.Outputs(), p)
	if err != nil {
		fmt.Println(err)
		return
	}
	// Per frame: fill s.Input(1) with preprocess, which returns tr; then
	//	outs, _ := s.Run(1)
	//	dets = dec.Decode(outs, 0, tr, dets[:0])
	_ = dec
}
