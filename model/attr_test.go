package model_test

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/imageio"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/preprocess"
)

// readAttr loads the model c declares, runs it on image and decodes item 0.
func readAttr(t *testing.T, c config.Model, image string) attr.Value {
	t.Helper()
	m, err := model.Load(c)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	f, err := imageio.Load(filepath.Join(assets(t), "images", image))
	if err != nil {
		t.Fatal(err)
	}
	pre, err := preprocess.NewCPU(m.Pre)
	if err != nil {
		t.Fatal(err)
	}
	defer pre.Close()
	in, err := m.Input(1)
	if err != nil {
		t.Fatal(err)
	}
	planar := make([]float32, len(in))
	if _, err := pre.Run(f, planar); err != nil {
		t.Fatal(err)
	}
	if m.NHWC {
		preprocess.Interleave(in, planar, m.Pre.Width*m.Pre.Height)
	} else {
		copy(in, planar)
	}
	outs, err := m.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := m.NewAttr()
	if err != nil || dec == nil {
		t.Fatalf("decoder %v, %v", dec, err)
	}
	var v attr.Value
	if !dec.Decode(outs, 0, &v) {
		t.Fatal("no attribute decoded")
	}
	return v
}

// TestOCRReadsPlate: the bundled recognizer (kind ocr, 32×160 input, its dictionary) reads the
// bundled plate crop 津B6H920 as B6H920 (its dictionary has no Chinese characters).
func TestOCRReadsPlate(t *testing.T) {
	a := assets(t)
	v := readAttr(t, config.Model{Name: "ocr", Kind: attr.KindOCR, Path: filepath.Join(a, "models/paddleocr_en_number_mobile_v2.0_rec.onnx"),
		Labels: filepath.Join(a, "labels/paddleocr_en_dict.txt"), Input: &config.Size{Width: 160, Height: 32}}, "plate_crop_B6H920.jpg")
	t.Logf("read %q %.3f", v.Text, v.Score)
	if !strings.Contains(v.Text, "B6H920") || v.Score < 0.5 {
		t.Fatalf("read %q (%.3f), want B6H920 in it", v.Text, v.Score)
	}
}

// TestEmbeddingReid: the bundled re-identification model (channels-last input) gives a unit
// vector of 256 values for a person crop.
func TestEmbeddingReid(t *testing.T) {
	v := readAttr(t, config.Model{Name: "reid", Kind: attr.KindEmbedding, Path: filepath.Join(assets(t), "models/person-reidentification-retail-0288.onnx")}, "person.jpg")
	var ss float64
	for _, x := range v.Vector {
		ss += float64(x) * float64(x)
	}
	if len(v.Vector) != 256 || math.Abs(ss-1) > 1e-4 {
		t.Fatalf("embedding of %d values, squared norm %v; want 256, 1", len(v.Vector), ss)
	}
}

// TestAttrModelRefused: a model that does not fit its kind, or an OCR dictionary that does not
// match the recognizer's classes, is refused at load, the message naming the shapes.
func TestAttrModelRefused(t *testing.T) {
	a := assets(t)
	ocr := filepath.Join(a, "models/paddleocr_en_number_mobile_v2.0_rec.onnx")
	for _, tc := range []struct {
		name string
		c    config.Model
		want error
		says string
	}{
		{"detector as ocr", config.Model{Kind: attr.KindOCR, Path: filepath.Join(a, "models/yolox_nano_416.onnx"),
			Labels: filepath.Join(a, "labels/coco80.names")},
			attr.ErrDictionary, "[1 3549 85]"},
		{"detector as embedding", config.Model{Kind: attr.KindEmbedding, Path: filepath.Join(a, "models/ultraface_rfb_320.onnx")},
			attr.ErrShape, "[1 4420 2]"},
		{"coco labels as dictionary", config.Model{Kind: attr.KindOCR, Path: ocr, Labels: filepath.Join(a, "labels/coco80.names"),
			Input: &config.Size{Width: 160, Height: 32}}, attr.ErrDictionary, "97 classes"},
		{"recognizer as classifier", config.Model{Kind: attr.KindClassify, Path: ocr, Labels: filepath.Join(a, "labels/paddleocr_en_dict.txt"),
			Input: &config.Size{Width: 160, Height: 32}}, attr.ErrShape, "[-1 -1 97]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := model.Load(tc.c)
			if err == nil {
				m.Close()
				t.Fatal("loaded")
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v; want %v naming %s", err, tc.want, tc.says)
			}
		})
	}
}
