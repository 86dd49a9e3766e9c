package preprocess

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vinfer/vinfer/frame"
)

// openCVReference is testdata/reference.json, written by testdata/gen_reference.py.
type openCVReference struct {
	OpenCV string `json:"opencv"`
	Resize []struct {
		Name          string `json:"name"`
		Input         string `json:"input"`
		Format        string `json:"format"`
		Width, Height int
		Spec          struct {
			Width, Height int
			Resize        string `json:"resize"`
			Interp        string `json:"interp"`
			Pad           uint8  `json:"pad"`
		} `json:"spec"`
		Output string `json:"output"`
	} `json:"resize"`
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("reading reference data (regenerate with preprocess/testdata/gen_reference.py): %v", err)
	}
	return b
}

// TestOpenCV compares Run with OpenCV 4.6's cv2.resize (and cvtColor for I420) on real
// picture crops. Bilinear resizing and the YUV conversion must be bit-exact. Area resizing
// uses Q13 fixed-point weights where OpenCV accumulates in float32, so values within rounding
// of .5 may land one step apart (and integer factors, which OpenCV averages with round-half-even,
// more often); at most one step is allowed there, and the test logs how many values differ.
func TestOpenCV(t *testing.T) {
	var ref openCVReference
	if err := json.Unmarshal(readTestdata(t, "reference.json"), &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Resize) == 0 {
		t.Fatal("reference.json lists no resize cases")
	}
	for _, rc := range ref.Resize {
		t.Run(rc.Name, func(t *testing.T) {
			in := readTestdata(t, rc.Input)
			w, h := rc.Width, rc.Height
			f := &frame.Frame{Width: w, Height: h, Device: -1}
			switch rc.Format {
			case "bgr24":
				f.Format, f.Planes[0], f.Strides[0] = frame.FormatBGR24, in, 3*w
			case "i420":
				f.Format = frame.FormatI420
				cw, ch := (w+1)/2, (h+1)/2
				f.Planes = [3][]byte{in[:w*h], in[w*h : w*h+cw*ch], in[w*h+cw*ch:]}
				f.Strides = [3]int{w, cw, cw}
			default:
				t.Fatalf("unknown input format %q", rc.Format)
			}
			s := Spec{Width: rc.Spec.Width, Height: rc.Spec.Height, Color: BGR, Pad: rc.Spec.Pad,
				Scale: 1, Std: [3]float32{1, 1, 1}}
			if rc.Spec.Resize == "stretch" {
				s.Resize = Stretch
			}
			if rc.Spec.Interp == "area" {
				s.Interp = Area
			}
			c, err := NewCPU(s)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float32, 3*s.Width*s.Height)
			if _, err := c.Run(f, got); err != nil {
				t.Fatal(err)
			}
			want := readTestdata(t, rc.Output) // H×W×3 BGR
			if len(want) != len(got) {
				t.Fatalf("reference holds %d values, tensor %d", len(want), len(got))
			}
			worst, differ := 0.0, 0
			plane := s.Width * s.Height
			for i, v := range want {
				g := got[(i%3)*plane+i/3]
				if d := math.Abs(float64(g) - float64(v)); d > 0 {
					differ++
					worst = max(worst, d)
				}
			}
			t.Logf("OpenCV %s: %d of %d values differ (%.2f%%), max abs diff %g", ref.OpenCV, differ, len(want), 100*float64(differ)/float64(len(want)), worst)
			switch {
			case s.Interp == Bilinear && differ > 0:
				t.Errorf("bilinear differs from OpenCV in %d values, want bit-exact", differ)
			case worst > 1:
				t.Errorf("max abs diff %g from OpenCV, want ≤ 1", worst)
			case differ*10 > len(want):
				t.Errorf("%d of %d values differ from OpenCV, want under 10%%", differ, len(want))
			}
		})
	}
}
