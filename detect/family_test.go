package detect

import (
	"slices"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/preprocess"
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
		{"yolov10n 640", img(640, 640), outs(o("output0", 1, 300, 6)), FamilyEndToEnd, nil},
		{"yolo26 dynamic batch", []tensor.Info{{Shape: []int64{-1, 3, 640, 640}}}, outs(o("output0", -1, 300, 6)), FamilyEndToEnd, nil},
		{"yolox one class", img(416, 416), outs(o("output", 1, 3549, 6)), FamilyYOLOX, nil},
		{"yolov5 one class", img(640, 640), outs(o("output0", 1, 25200, 6)), FamilyYOLOv5, nil},
		{"picodet_s_320 interleaved", img(320, 320), outs(o("t0", 1, 1600, 80), o("t1", 1, 1600, 32), o("t2", 1, 400, 80), o("t3", 1, 400, 32),
			o("t4", 1, 100, 80), o("t5", 1, 100, 32), o("t6", 1, 25, 80), o("t7", 1, 25, 32)), FamilyPicoDet, nil},
		{"picodet 416 three levels grouped", img(416, 416), outs(o("c8", 1, 2704, 3), o("c16", 1, 676, 3), o("c32", 1, 169, 3),
			o("d8", 1, 2704, 32), o("d16", 1, 676, 32), o("d32", 1, 169, 32)), FamilyPicoDet, nil},
		// Without an input size: only the layouts that need none.
		{"end2end without input", nil, outs(o("output0", 1, 300, 6)), FamilyEndToEnd, nil},
		{"ultraface dynamic size", []tensor.Info{{Name: "input", Shape: []int64{1, 3, -1, -1}}}, outs(o("scores", 1, 4420, 2), o("boxes", 1, 4420, 4)), FamilyUltraFace, nil},
		{"nanodet legacy without input", nil, outs(o("cls_pred_stride_8", 1, 1600, 80), o("dis_pred_stride_8", 1, 1600, 32)), FamilyNanoDet, nil},
		{"yolox without input", nil, outs(o("output", 1, 0, 85)), "", []string{"no input", "family:"}},
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

// TestKinds checks the registry: unique words, complete descriptors, usable defaults.
func TestKinds(t *testing.T) {
	seen := map[string]Family{}
	for i, k := range kinds {
		if k.Family == "" || k.New == nil || k.Match == nil {
			t.Fatalf("kinds[%d] %q: Family, New and Match are required", i, k.Family)
		}
		for _, w := range append([]string{string(k.Family)}, k.Aliases...) {
			if w != strings.ToLower(w) {
				t.Errorf("%s: word %q is not lower case", k.Family, w)
			}
			if g, ok := seen[w]; ok {
				t.Errorf("%s: word %q is also %s's", k.Family, w, g)
			}
			seen[w] = k.Family
			if f, err := ParseFamily(w); err != nil || f != k.Family {
				t.Errorf("ParseFamily(%q) = %q, %v", w, f, err)
			}
		}
		if Families[i] != k.Family {
			t.Errorf("Families[%d] = %q, want %q", i, Families[i], k.Family)
		}
		if k.Preprocess.Width != 0 || k.Preprocess.Height != 0 {
			t.Errorf("%s: Preprocess has a size; it comes from the model", k.Family)
		}
		pre := k.Preprocess
		pre.Width, pre.Height = 320, 320
		if err := pre.Validate(); err != nil {
			t.Errorf("%s: %v", k.Family, err)
		}
		if _, err := (Params{InputWidth: 320, InputHeight: 320}).resolve(k.Family); err != nil {
			t.Errorf("%s: defaults: %v", k.Family, err)
		}
	}
}

// TestKindPreprocess pins each family's published preprocessing (the README's family table).
func TestKindPreprocess(t *testing.T) {
	one := [3]float32{1, 1, 1}
	for _, tc := range []struct {
		f    Family
		want preprocess.Spec
	}{
		{FamilyYOLOX, preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Letterbox, Align: preprocess.TopLeft, Pad: 114, Scale: 1, Std: one}},
		{FamilyFastestDet, preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Stretch, Interp: preprocess.Area, Scale: 1.0 / 255, Std: one}},
		{FamilyUltraFace, preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Stretch, Scale: 1, Mean: [3]float32{127, 127, 127}, Std: [3]float32{128, 128, 128}}},
		{FamilyYOLOv5, preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center, Pad: 114, Scale: 1.0 / 255, Std: one}},
		{FamilyYOLOv8, preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center, Pad: 114, Scale: 1.0 / 255, Std: one}},
		{FamilyNanoDet, preprocess.Spec{Color: preprocess.BGR, Resize: preprocess.Stretch, Scale: 1, Mean: [3]float32{103.53, 116.28, 123.675}, Std: [3]float32{57.375, 57.12, 58.395}}},
	} {
		k, ok := Lookup(tc.f)
		if !ok || k.Preprocess != tc.want {
			t.Errorf("Lookup(%s) = %+v, %v; want preprocessing %+v", tc.f, k.Preprocess, ok, tc.want)
		}
	}
	if _, ok := Lookup("ssd"); ok {
		t.Error("Lookup(ssd) found a kind")
	}
}

// TestLookupCopies: a Kind from Lookup, and DefaultParams, share no slices with the registry.
func TestLookupCopies(t *testing.T) {
	k, _ := Lookup(FamilyYOLOv5)
	k.Defaults.Anchors[0][0] = -1
	k2, _ := Lookup(FamilyUltraFace)
	k2.Defaults.Labels[0] = "x"
	DefaultParams(FamilyYOLOv8).Labels[0] = "x"
	if a := DefaultParams(FamilyYOLOv5).Anchors; a[0][0] != 10 || !slices.Equal(a[2], []float32{116, 90, 156, 198, 373, 326}) {
		t.Errorf("anchors %v", a)
	}
	if l := DefaultParams(FamilyUltraFace).Labels; !slices.Equal(l, []string{"face"}) {
		t.Errorf("labels %v", l)
	}
	if l := DefaultParams(FamilyYOLOv8).Labels; l[0] != "person" {
		t.Errorf("labels %v", l[:3])
	}
}

func TestFamilyUnmarshalText(t *testing.T) {
	for in, want := range map[string]Family{"": "", "yolox": FamilyYOLOX, "YOLO11": FamilyYOLOv8, " yolov11": FamilyYOLOv8, "NanoDet": FamilyNanoDet} {
		f := Family("set")
		if err := f.UnmarshalText([]byte(in)); err != nil || f != want {
			t.Errorf("UnmarshalText(%q) = %q, %v; want %q", in, f, err, want)
		}
	}
	var f Family
	if err := f.UnmarshalText([]byte("ssd")); err == nil || !strings.Contains(err.Error(), "yolox, fastestdet, ultraface, yolov5, yolov8, nanodet") {
		t.Errorf("%v", err)
	}
}
