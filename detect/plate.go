package detect

import (
	"fmt"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// FamilyPlate is a licence-plate detector with four corner landmarks (HyperLPR3).
const FamilyPlate Family = "plate"

// init registers the plate family last in the registry (family.go's kinds) and in Families,
// which package initialisation computed before.
func init() {
	kinds = append(kinds, plateKind)
	Families = familyNames()
}

// plateKind is HyperLPR3's plate detector (y5fu, a YOLOv5-face variant): boxes with the plate's
// four corners.
//
//	outputs     one [N,3A,15], A = Σ_s ⌈H/s⌉·⌈W/s⌉ for s = 8,16,32: per anchor cx,cy,w,h in
//	            input pixels, objectness, the corners x,y ×4 (top left, top right, bottom
//	            right, bottom left), and 2 class probabilities (single-row, double-row plate)
//	preprocess  RGB, /255, letterbox centred with pad 114
//	defaults    score 0.3 (objectness · class), NMS IoU 0.5 (HyperLPR3 multitask_detect.py)
//
// Its layout is YOLOv5's with 8 more columns, so it is never auto-detected: declare
// family: plate.
var plateKind = Kind{
	Family: FamilyPlate,
	Preprocess: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center,
		Pad: 114, Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}},
	Defaults: Params{ScoreThreshold: 0.3, NMSIoU: 0.5, Labels: []string{"plate", "plate_double"}},
	New:      newPlate,
	Match:    func(int, int, []tensor.Info) bool { return false },
}

// plateCols is the row width: box 4, objectness 1, corners 8, classes.
const plateCols = 13

type plate struct {
	base
	rows, cols int
}

func newPlate(outs []tensor.Info, p Params) (Decoder, error) {
	if len(outs) != 1 || len(outs[0].Shape) != 3 || known(outs[0].Shape, 2, 0) <= plateCols {
		return nil, fmt.Errorf("detect: plate wants one output [N,A,13+C] (box, objectness, 4 corners, classes); the model has %s", describe(outs))
	}
	d := &plate{}
	_, cells := grids(p.InputWidth, p.InputHeight, []int{8, 16, 32})
	d.rows, d.cols = known(outs[0].Shape, 1, 3*cells), int(outs[0].Shape[2])
	return d, d.init(FamilyPlate, p, d.cols-plateCols)
}

// Decode reads each row as multitask_detect.py's post_precessing does: score = objectness ·
// the best class probability; corners kept with the box through NMS.
func (d *plate) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	rows := d.rows
	if len(outs) > 0 {
		rows = known(outs[0].Shape, 1, rows)
	}
	data := item(outs, 0, b, rows*d.cols)
	if data == nil {
		return dst
	}
	thr := d.p.ScoreThreshold
	start := len(dst)
	for r := 0; r < rows; r++ {
		row := data[r*d.cols : (r+1)*d.cols]
		if !(row[4] > thr) {
			continue
		}
		c, p := best(row[plateCols:], thr/row[4])
		if c < 0 {
			continue
		}
		score := row[4] * p
		if !(score > thr) {
			continue
		}
		hw, hh := row[2]/2, row[3]/2
		n := len(dst)
		dst = add(dst, c, score, row[0]-hw, row[1]-hh, row[0]+hw, row[1]+hh)
		if len(dst) > n {
			k := &dst[n]
			for i := range 4 {
				x, y := row[5+2*i], row[6+2*i]
				if !finite(x) || !finite(y) {
					k.Corners = [4][2]float32{}
					break
				}
				k.Corners[i] = [2]float32{x, y}
			}
		}
	}
	return d.finish(dst, start, tr)
}
