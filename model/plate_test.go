package model_test

import (
	"path/filepath"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/imageio"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/preprocess"
)

// TestPlateDetectorCorners: the bundled HyperLPR3 detector, declared family: plate, finds the
// green plate at the front right of its street photo with its four corners: inside the box,
// clockwise from the top left, and skewed as the plate is seen (the left edge lower than the
// right).
func TestPlateDetectorCorners(t *testing.T) {
	a := assets(t)
	m, err := model.Load(config.Model{Name: "plates", Family: detect.FamilyPlate, Path: filepath.Join(a, "models/hyperlpr3_y5fu_320x_sim.onnx")})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	f, err := imageio.Load(filepath.Join(a, "images/plates_hyperlpr_test_img.jpg"))
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
	tr, err := pre.Run(f, in)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.Run(1)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := m.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	dets := dec.Decode(outs, 0, tr, nil)
	if len(dets) == 0 {
		t.Fatal("no plate found")
	}
	d := dets[0]
	t.Logf("%s %.3f box %.0f corners %.0f", d.Label, d.Score, d.Box, d.Corners)
	if d.Label != "plate" || d.Score < 0.6 || d.Box[0] < 1700 || d.Box[1] < 700 || !d.HasCorners() {
		t.Fatalf("first detection %s %.3f %.0f; want the plate near [1752 747 1879 855] with corners", d.Label, d.Score, d.Box)
	}
	for i, c := range d.Corners {
		if c[0] < d.Box[0]-3 || c[0] > d.Box[2]+3 || c[1] < d.Box[1]-3 || c[1] > d.Box[3]+3 {
			t.Errorf("corner %d %.0f outside the box %.0f", i, c, d.Box)
		}
	}
	tl, tr2, br, bl := d.Corners[0], d.Corners[1], d.Corners[2], d.Corners[3]
	if !(tl[0] < tr2[0] && bl[0] < br[0] && tl[1] < bl[1] && tr2[1] < br[1] && tl[1]-tr2[1] > 15) {
		t.Errorf("corners %.0f are not clockwise from the top left with the left edge lower", d.Corners)
	}
}
