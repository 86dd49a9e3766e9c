package detect

import (
	"math"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

func checkDetections(t *testing.T, got, want []Detection) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d detections, want %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ClassID != w.ClassID || (w.Label != "" && g.Label != w.Label) || math.Abs(float64(g.Score-w.Score)) > 1e-4 {
			t.Errorf("detection %d: %+v, want %+v", i, g, w)
			continue
		}
		for k := range 4 {
			if math.Abs(float64(g.Box[k]-w.Box[k])) > 1e-3 {
				t.Errorf("detection %d box %v, want %v", i, g.Box, w.Box)
				break
			}
		}
	}
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			outs := tc.build()
			d, err := NewDecoder(tc.family, infos(outs), tc.params)
			if err != nil {
				t.Fatal(err)
			}
			if d.Classes() != len(tc.params.Labels) {
				t.Errorf("Classes() = %d, want %d", d.Classes(), len(tc.params.Labels))
			}
			prefix := []Detection{{Label: "kept"}}
			got := d.Decode(outs, 0, tc.tr, prefix)
			if got[0].Label != "kept" {
				t.Fatal("Decode overwrote the caller's detections")
			}
			checkDetections(t, got[1:], tc.want)
			// The family is recognised from the shapes alone.
			in := []tensor.Info{{Name: "images", Shape: []int64{1, 3, int64(tc.params.InputHeight), int64(tc.params.InputWidth)}}}
			if f, err := DetectFamily(in, infos(outs)); err != nil || f != tc.family {
				t.Errorf("DetectFamily = %q, %v; want %q", f, err, tc.family)
			}
			// Out-of-range batch items give nothing rather than a panic.
			for _, b := range []int{-1, 1, math.MaxInt32} {
				if n := len(d.Decode(outs, b, tc.tr, nil)); n != 0 {
					t.Errorf("batch item %d: %d detections", b, n)
				}
			}
			if n := len(d.Decode(nil, 0, tc.tr, nil)); n != 0 {
				t.Errorf("no outputs: %d detections", n)
			}
		})
	}
}

func TestDecodeZeroAllocs(t *testing.T) {
	for _, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			outs := tc.build()
			d, err := NewDecoder(tc.family, infos(outs), tc.params)
			if err != nil {
				t.Fatal(err)
			}
			dst := d.Decode(outs, 0, tc.tr, nil)
			if a := testing.AllocsPerRun(20, func() { dst = d.Decode(outs, 0, tc.tr, dst[:0]) }); a != 0 {
				t.Errorf("%v allocations per Decode", a)
			}
		})
	}
}

// TestDecodeBatch decodes item 1 of a batch of 2 whose item 0 is empty.
func TestDecodeBatch(t *testing.T) {
	for _, tc := range decodeCases() {
		t.Run(tc.name, func(t *testing.T) {
			one := tc.build()
			two := make([]tensor.Tensor, len(one))
			for i, o := range one {
				two[i] = tensor.Tensor{Info: o.Info, Data: make([]float32, 2*len(o.Data))}
				two[i].Shape = append([]int64{2}, o.Shape[1:]...)
				copy(two[i].Data[len(o.Data):], o.Data)
				if tc.family == FamilyUltraFace && o.Name == "scores" {
					for p := 0; p < len(o.Data); p += 2 {
						two[i].Data[p] = 1 // item 0: background everywhere
					}
				}
			}
			decl := infos(two)
			for i := range decl {
				decl[i].Shape = append([]int64{-1}, decl[i].Shape[1:]...) // dynamic batch
			}
			d, err := NewDecoder(tc.family, decl, tc.params)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(d.Decode(two, 0, tc.tr, nil)); n != 0 {
				t.Errorf("item 0: %d detections, want 0", n)
			}
			checkDetections(t, d.Decode(two, 1, tc.tr, nil), tc.want)
		})
	}
}

func TestDecodeOptions(t *testing.T) {
	yolox := decodeCases()[0]
	outs := yolox.build()
	run := func(p Params) []Detection {
		t.Helper()
		d, err := NewDecoder(FamilyYOLOX, infos(outs), p)
		if err != nil {
			t.Fatal(err)
		}
		return d.Decode(outs, 0, preprocess.Transform{}, nil)
	}
	p := yolox.params
	p.ClassAgnosticNMS = true
	checkDetections(t, run(p), yolox.want[:1])

	p = yolox.params
	p.MaxDetections = 1
	checkDetections(t, run(p), yolox.want[:1])

	p = yolox.params
	p.ScoreThreshold = 0.7
	checkDetections(t, run(p), yolox.want[:1])

	p = yolox.params
	p.NMSIoU = 1 // nothing overlaps by more than 1
	if got := run(p); len(got) != 3 {
		t.Errorf("IoU 1: %d detections, want 3", len(got))
	}

	p = yolox.params
	p.Labels, p.LabelsFile = nil, ""
	if got := run(p); len(got) != 2 || got[0].Label != "class_16" {
		t.Errorf("generated label %q", got[0].Label)
	}

	// Boxes wholly in the letterbox padding (below a 832×200 frame) are dropped.
	tr := preprocess.Transform{ScaleX: 0.5, ScaleY: 0.5, SrcWidth: 832, SrcHeight: 200}
	d, _ := NewDecoder(FamilyYOLOX, infos(outs), yolox.params)
	if got := d.Decode(outs, 0, tr, nil); len(got) != 0 {
		t.Errorf("boxes in the padding: %+v", got)
	}
}

func TestDecodeNonFinite(t *testing.T) {
	yolox := decodeCases()[0]
	outs := yolox.build()
	r := (52*52 + 7*26 + 5) * 85
	outs[0].Data[r+2] = 200 // e^200 overflows float32: box dropped
	outs[0].Data[10*85+4] = float32(math.NaN())
	d, err := NewDecoder(FamilyYOLOX, infos(outs), yolox.params)
	if err != nil {
		t.Fatal(err)
	}
	got := d.Decode(outs, 0, preprocess.Transform{}, nil)
	if len(got) != 2 || got[0].Score > 0.73 {
		t.Errorf("%+v", got)
	}
}

func TestNewDecoderErrors(t *testing.T) {
	in := func(f Family, w, h int) Params { return params(f, w, h) }
	out := func(name string, shape ...int64) []tensor.Info {
		return []tensor.Info{{Name: name, Shape: shape}}
	}
	labels5 := in(FamilyYOLOX, 416, 416)
	labels5.Labels, labels5.LabelsFile = []string{"a", "b", "c", "d", "e"}, "/etc/vinfer/five.names"
	for _, tc := range []struct {
		name   string
		family Family
		outs   []tensor.Info
		p      Params
		want   []string
	}{
		{"unknown family", "ssd", out("o", 1, 10, 6), in(FamilyYOLOX, 416, 416), []string{`"ssd"`, "yolox, fastestdet"}},
		{"no input size", FamilyYOLOX, out("output", 1, 3549, 85), Params{}, []string{"input size 0x0"}},
		{"labels count", FamilyYOLOX, out("output", 1, 3549, 85), labels5, []string{"/etc/vinfer/five.names", "5 class names", "80 classes"}},
		{"yolox wrong rows", FamilyYOLOX, out("output", 1, 8400, 85), in(FamilyYOLOX, 416, 416), []string{"[N,3549,5+C]", "416x416", "output [1 8400 85]"}},
		{"yolox 2 outputs", FamilyYOLOX, append(out("a", 1, 3549, 85), out("b", 1, 3549, 85)...), in(FamilyYOLOX, 416, 416), []string{"one output"}},
		{"fastestdet grid", FamilyFastestDet, out("758", 1, 85, 20, 20), in(FamilyFastestDet, 352, 352), []string{"[N,5+C,22,22]"}},
		{"ultraface no boxes", FamilyUltraFace, out("scores", 1, 4420, 2), in(FamilyUltraFace, 320, 240), []string{"two outputs"}},
		{"ultraface priors", FamilyUltraFace, append(out("scores", 1, 4420, 2), out("boxes", 1, 4000, 4)...), in(FamilyUltraFace, 320, 240), []string{"same P"}},
		{"ultraface labels", FamilyUltraFace, append(out("scores", 1, 4420, 3), out("boxes", 1, 4420, 4)...), in(FamilyUltraFace, 320, 240), []string{"1 class names", "2 classes"}},
		{"yolov5 2-D", FamilyYOLOv5, out("output0", 1, 25200), in(FamilyYOLOv5, 640, 640), []string{"[N,A,5+C]"}},
		{"yolov5 heads grid", FamilyYOLOv5, append(out("a", 1, 255, 80, 80), append(out("b", 1, 255, 40, 40), out("c", 1, 255, 21, 21)...)...), in(FamilyYOLOv5, 640, 640), []string{"21x21 grid fits no stride"}},
		{"yolov5 heads channels", FamilyYOLOv5, append(out("a", 1, 256, 80, 80), append(out("b", 1, 255, 40, 40), out("c", 1, 255, 20, 20)...)...), in(FamilyYOLOv5, 640, 640), []string{"256 channels"}},
		{"yolov8 seg", FamilyYOLOv8, append(out("output0", 1, 116, 8400), out("output1", 1, 32, 160, 160)...), in(FamilyYOLOv8, 640, 640), []string{"segmentation"}},
		{"nanodet plus rows", FamilyNanoDet, out("output", 1, 3549, 112), in(FamilyNanoDet, 416, 416), []string{"[N,3598,C+32]"}},
		{"nanodet legacy missing", FamilyNanoDet, out("cls_pred_stride_8", 1, 1600, 80), in(FamilyNanoDet, 320, 320), []string{"dis_pred_stride_8"}},
		{"nanodet legacy bins", FamilyNanoDet, append(out("cls_pred_stride_8", 1, 1600, 80), out("dis_pred_stride_8", 1, 1600, 44)...), in(FamilyNanoDet, 320, 320), []string{"[N,1600,32]"}},
		{"end2end columns", FamilyEndToEnd, out("output0", 1, 300, 7), in(FamilyEndToEnd, 640, 640), []string{"[N,K,6]", "output0 [1 300 7]"}},
		{"end2end rows", FamilyEndToEnd, out("output0", 1, 100000, 6), in(FamilyEndToEnd, 640, 640), []string{"K ≤ 10000"}},
		{"picodet level", FamilyPicoDet, append(out("c8", 1, 1600, 80), append(out("d8", 1, 1600, 32), append(out("c16", 1, 400, 80), out("d16", 1, 399, 32)...)...)...),
			in(FamilyPicoDet, 320, 320), []string{"picodet", "stride 16 wants 2 outputs", "d16 [1 399 32]"}},
		{"picodet bins", FamilyPicoDet, append(out("c8", 1, 1600, 80), append(out("d8", 1, 1600, 40), append(out("c16", 1, 400, 80), out("d16", 1, 400, 40)...)...)...),
			in(FamilyPicoDet, 320, 320), []string{"[N,1600,32] (reg_max 7)"}},
		{"score threshold", FamilyYOLOX, out("output", 1, 3549, 85), Params{ScoreThreshold: 2, InputWidth: 416, InputHeight: 416}, []string{"score threshold 2"}},
		{"anchors", FamilyYOLOv5, out("output0", 1, 25200, 85), Params{Anchors: [][]float32{{1, 2, 3}}, InputWidth: 640, InputHeight: 640}, []string{"w,h pairs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewDecoder(tc.family, tc.outs, tc.p)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestDefaultParams(t *testing.T) {
	for _, tc := range []struct {
		f          Family
		score, iou float32
		labels     int
	}{
		{FamilyYOLOX, 0.3, 0.45, 80},
		{FamilyFastestDet, 0.65, 0.45, 80},
		{FamilyUltraFace, 0.7, 0.3, 1},
		{FamilyYOLOv5, 0.25, 0.45, 80},
		{FamilyYOLOv8, 0.25, 0.7, 80},
		{FamilyNanoDet, 0.35, 0.6, 80},
	} {
		p := DefaultParams(tc.f)
		if p.ScoreThreshold != tc.score || p.NMSIoU != tc.iou || len(p.Labels) != tc.labels || p.MaxDetections == 0 {
			t.Errorf("%s: %+v", tc.f, p)
		}
	}
	// Zero fields take the defaults.
	p, err := Params{InputWidth: 416, InputHeight: 416}.resolve(FamilyYOLOX)
	if err != nil || p.ScoreThreshold != 0.3 || p.NMSIoU != 0.45 || p.MaxDetections != 300 || p.RegMax != 7 {
		t.Errorf("%+v %v", p, err)
	}
}
