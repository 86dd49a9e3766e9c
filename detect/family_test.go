package detect

import (
	"strings"
	"testing"

	"github.com/vinfer/vinfer/tensor"
)

func TestDetectFamily(t *testing.T) {
	img := func(w, h int64) []tensor.Info {
		return []tensor.Info{{Name: "images", Shape: []int64{1, 3, h, w}}}
	}
	o := func(name string, shape ...int64) tensor.Info { return tensor.Info{Name: name, Shape: shape} }
	outs := func(o ...tensor.Info) []tensor.Info { return o }
	for _, tc := range []struct {
		name    string
		inputs  []tensor.Info
		outputs []tensor.Info
		want    Family
		errs    []string
	}{
		// The bundled models (MANIFEST.md).
		{"yolox_nano_416", img(416, 416), outs(o("output", 1, 3549, 85)), FamilyYOLOX, nil},
		{"fastestdet_352", img(352, 352), outs(o("758", 1, 85, 22, 22)), FamilyFastestDet, nil},
		{"ultraface_rfb_320", img(320, 240), outs(o("scores", 1, 4420, 2), o("boxes", 1, 4420, 4)), FamilyUltraFace, nil},
		{"ultraface boxes first", img(640, 480), outs(o("b", 1, 17640, 4), o("s", 1, 17640, 2)), FamilyUltraFace, nil},
		// Published export layouts.
		{"yolov5s 640", img(640, 640), outs(o("output0", 1, 25200, 85)), FamilyYOLOv5, nil},
		{"yolov5 dynamic batch", []tensor.Info{{Shape: []int64{-1, 3, 640, 640}}}, outs(o("output0", -1, 25200, 85)), FamilyYOLOv5, nil},
		{"yolov5 raw heads", img(640, 640), outs(o("a", 1, 255, 80, 80), o("b", 1, 255, 40, 40), o("c", 1, 255, 20, 20)), FamilyYOLOv5, nil},
		{"yolov8n 640", img(640, 640), outs(o("output0", 1, 84, 8400)), FamilyYOLOv8, nil},
		{"yolo11 320x640", img(640, 320), outs(o("output0", 1, 84, 4200)), FamilyYOLOv8, nil},
		{"yolov8 one class", img(640, 640), outs(o("output0", 1, 5, 8400)), FamilyYOLOv8, nil},
		{"nanodet-plus-m 416", img(416, 416), outs(o("output", 1, 3598, 112)), FamilyNanoDet, nil},
		{"nanodet-plus-m 320", img(320, 320), outs(o("output", 1, 2125, 112)), FamilyNanoDet, nil},
		{"nanodet legacy", img(320, 320), outs(o("cls_pred_stride_8", 1, 1600, 80), o("cls_pred_stride_16", 1, 400, 80),
			o("cls_pred_stride_32", 1, 100, 80), o("dis_pred_stride_8", 1, 1600, 32), o("dis_pred_stride_16", 1, 400, 32),
			o("dis_pred_stride_32", 1, 100, 32)), FamilyNanoDet, nil},
		// Errors.
		{"yolox at the wrong input size", img(640, 640), outs(o("output", 1, 3549, 85)), "", []string{"output [1 3549 85]", "images [1 3 640 640]", "no supported layout", "family:"}},
		{"unknown", img(300, 300), outs(o("detection_boxes", 1, 100, 4), o("detection_scores", 1, 100), o("num", 1)), "", []string{"detection_boxes [1 100 4]", "family:"}},
		{"dynamic input size", []tensor.Info{{Name: "x", Shape: []int64{1, 3, -1, -1}}}, outs(o("output0", 1, 84, -1)), "", []string{"dynamic size", "family:"}},
		{"no outputs", img(640, 640), nil, "", []string{"(none)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := DetectFamily(tc.inputs, tc.outputs)
			if tc.errs == nil {
				if err != nil || f != tc.want {
					t.Fatalf("got %q, %v; want %q", f, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %q, want an error", f)
			}
			for _, w := range tc.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDetectFamilyAmbiguous(t *testing.T) {
	// A [1,A,K] output whose A fits YOLOX's three strides and whose K is also the anchor
	// count: nobody exports that, but it must not be guessed.
	n := int64(cellCount(64, 64, []int{8, 16, 32})) // 84
	_, err := DetectFamily([]tensor.Info{{Shape: []int64{1, 3, 64, 64}}}, []tensor.Info{{Name: "o", Shape: []int64{1, n, n}}})
	if err == nil || !strings.Contains(err.Error(), "fit [yolox yolov8] alike") {
		t.Errorf("%v", err)
	}
}

func TestDetectFamilyAt(t *testing.T) {
	out := []tensor.Info{{Name: "output0", Shape: []int64{1, 84, 8400}}}
	if f, err := DetectFamilyAt(640, 640, out); f != FamilyYOLOv8 || err != nil {
		t.Errorf("%q %v", f, err)
	}
	if _, err := DetectFamilyAt(0, 0, out); err == nil || !strings.Contains(err.Error(), "input size 0x0 is not set") {
		t.Errorf("%v", err)
	}
}

func TestParseFamily(t *testing.T) {
	for in, want := range map[string]Family{"yolox": FamilyYOLOX, " YOLOv8 ": FamilyYOLOv8, "yolo11": FamilyYOLOv8, "nanodet": FamilyNanoDet} {
		if f, err := ParseFamily(in); err != nil || f != want {
			t.Errorf("ParseFamily(%q) = %q, %v", in, f, err)
		}
	}
	if _, err := ParseFamily("ssd"); err == nil || !strings.Contains(err.Error(), "ultraface") {
		t.Errorf("%v", err)
	}
}

func TestInputSize(t *testing.T) {
	if w, h, err := InputSize(tensor.Info{Shape: []int64{-1, 3, 240, 320}}); w != 320 || h != 240 || err != nil {
		t.Errorf("%d %d %v", w, h, err)
	}
	if _, _, err := InputSize(tensor.Info{Name: "x", Shape: []int64{1, 240, 320}}); err == nil {
		t.Error("3-D input accepted")
	}
}
