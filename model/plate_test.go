package model_test

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/imageio"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/preprocess"
)

// plates runs the bundled plate detector (family plate) on image, rectifies each plate by its
// corners and reads it with the bundled recognizer.
var marg, rw = 0, 160

func plates(t *testing.T, image string) ([]detect.Detection, []attr.Value) {
	t.Helper()
	a := assets(t)
	bgr := preprocess.BGR
	det, err := model.Load(config.Model{Name: "plate", Family: detect.FamilyPlate, Path: filepath.Join(a, "models/hyperlpr3_y5fu_320x_sim.onnx")})
	if err != nil {
		t.Fatal(err)
	}
	defer det.Close()
	ocr, err := model.Load(config.Model{Name: "ocr", Kind: attr.KindOCR, Path: filepath.Join(a, "models/paddleocr_en_number_mobile_v2.0_rec.onnx"),
		Labels: filepath.Join(a, "labels/paddleocr_en_dict.txt"), Input: &config.Size{Width: 160, Height: 32}, Preprocess: &config.Preprocess{Color: &bgr}})
	if err != nil {
		t.Fatal(err)
	}
	defer ocr.Close()
	path := image
	if !filepath.IsAbs(path) {
		path = filepath.Join(a, "images", image)
	}
	f, err := imageio.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	run := func(m *model.Model, f *frame.Frame) []float32 {
		pre, err := preprocess.NewCPU(m.Pre)
		if err != nil {
			t.Fatal(err)
		}
		defer pre.Close()
		in, err := m.Input(1)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := pre.Run(f, in)
		if err != nil {
			t.Fatal(err)
		}
		_ = tr
		return in
	}
	pre, _ := preprocess.NewCPU(det.Pre)
	defer pre.Close()
	in, _ := det.Input(1)
	tr, err := pre.Run(f, in)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := det.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	dec, _ := det.NewDecoder()
	dets := dec.Decode(outs, 0, tr, nil)
	var reads []attr.Value
	od, _ := ocr.NewAttr()
	for _, d := range dets {
		var crop frame.Frame
		q := d.Corners
		var cx, cy float32
		for _, c := range q {
			cx, cy = cx+c[0]/4, cy+c[1]/4
		}
		m := float32(1.0 + float64(marg)/100)
		for i := range q {
			q[i][0] = cx + (q[i][0]-cx)*m
			q[i][1] = cy + (q[i][1]-cy)*m
		}
		if err := preprocess.Rectify(&crop, f, q, rw, 48); err != nil {
			t.Fatal(err)
		}
		savePNG(t, &crop, fmt.Sprintf("/tmp/plate_%s_%d.png", filepath.Base(image), len(reads)))
		run(ocr, &crop)
		outs, err := ocr.Run(1)
		if err != nil {
			t.Fatal(err)
		}
		var v attr.Value
		od.Decode(outs, 0, &v)
		t.Logf("%s %.3f box %.0f corners %.0f read %q %.3f", d.Label, d.Score, d.Box, d.Corners, v.Text, v.Score)
		reads = append(reads, v)
	}
	return dets, reads
}

func TestPlateScratch(t *testing.T) {
	plates(t, "/tmp/comp.png")
	for _, m := range []int{0} {
		for _, w := range []int{160} {
			marg, rw = m, w
			t.Log(m, w)
			plates(t, "plates_hyperlpr_test_img.jpg")
		}
	}
	f, _ := imageio.Load(filepath.Join(assets(t), "images", "plates_hyperlpr_1.jpg"))
	savePNG(t, f, "/tmp/one.png")
}

func savePNG(t *testing.T, f *frame.Frame, path string) {
	img := image.NewRGBA(image.Rect(0, 0, f.Width, f.Height))
	for y := 0; y < f.Height; y++ {
		for x := 0; x < f.Width; x++ {
			p := f.Planes[0][y*f.Strides[0]+3*x:]
			img.Set(x, y, color.RGBA{p[2], p[1], p[0], 255})
		}
	}
	o, _ := os.Create(path)
	png.Encode(o, img)
	o.Close()
}
