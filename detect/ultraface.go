package detect

import (
	"fmt"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// ultraFaceKind is Linzaer/Ultra-Light-Fast-Generic-Face-Detector-1MB. Its layout needs no
// input size to recognise.
//
//	outputs     two, scores [N,P,1+C] (C ≥ 1) and boxes [N,P,4]
//	preprocess  RGB, (x−127)/128, stretch
//	defaults    score 0.7, NMS IoU 0.3, the one label "face" (detect_imgs.py)
var ultraFaceKind = Kind{
	Family: FamilyUltraFace,
	Preprocess: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Stretch,
		Scale: 1, Mean: [3]float32{127, 127, 127}, Std: [3]float32{128, 128, 128}},
	Defaults: Params{ScoreThreshold: 0.7, NMSIoU: 0.3, Labels: []string{"face"}, LabelsFile: "face (built in)"},
	New:      newUltraFace,
	Match: func(_, _ int, outs []tensor.Info) bool {
		_, _, err := ultraFaceOutputs(outs)
		return err == nil
	},
	SizeFree: true,
}

// ultraFace decodes Ultra-Light-Fast-Generic-Face-Detector's outputs with post-processing in
// the graph: scores [N,P,1+C] (softmax, column 0 background) and boxes [N,P,4], corner form
// normalised to the input, decoded from the priors already.
type ultraFace struct {
	base
	scores, boxes int // output indices
	priors, cols  int
}

// ultraFaceOutputs finds the scores and boxes outputs: by name when they are called "scores"
// and "boxes" (the published models), else by shape ([N,P,4] is the boxes).
func ultraFaceOutputs(outs []tensor.Info) (scores, boxes int, err error) {
	scores, boxes = -1, -1
	for i, o := range outs {
		switch o.Name {
		case "scores":
			scores = i
		case "boxes":
			boxes = i
		}
	}
	if len(outs) == 2 && (scores < 0 || boxes < 0) {
		scores, boxes = 0, 1
		if known(outs[0].Shape, 2, 0) == 4 && known(outs[1].Shape, 2, 0) != 4 {
			scores, boxes = 1, 0
		}
	}
	if len(outs) != 2 || scores == boxes {
		return -1, -1, fmt.Errorf("detect: ultraface wants two outputs, scores [N,P,1+C] and boxes [N,P,4]; the model has %s", describe(outs))
	}
	s, b := outs[scores].Shape, outs[boxes].Shape
	if !fits(b, -1, -1, 4) || len(s) != 3 || s[1] <= 0 || b[1] != s[1] || known(s, 2, 0) < 2 {
		return -1, -1, fmt.Errorf("detect: ultraface wants scores [N,P,1+C] and boxes [N,P,4] with the same P; the model has %s", describe(outs))
	}
	return scores, boxes, nil
}

func newUltraFace(outs []tensor.Info, p Params) (Decoder, error) {
	si, bi, err := ultraFaceOutputs(outs)
	if err != nil {
		return nil, err
	}
	d := &ultraFace{scores: si, boxes: bi, priors: int(outs[si].Shape[1]), cols: int(outs[si].Shape[2])}
	return d, d.init(FamilyUltraFace, p, d.cols-1)
}

// Decode follows the repository's detect_imgs.py / vision/utils/box_utils.py predict: prior i's
// best foreground column k ≥ 1 is class k−1 with that probability as score; its box is scaled
// by the input size and mapped by tr (which undoes the stretch).
func (d *ultraFace) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection {
	sc := item(outs, d.scores, b, d.priors*d.cols)
	bx := item(outs, d.boxes, b, d.priors*4)
	if sc == nil || bx == nil {
		return dst
	}
	thr := d.p.ScoreThreshold
	iw, ih := float32(d.p.InputWidth), float32(d.p.InputHeight)
	start := len(dst)
	for i := 0; i < d.priors; i++ {
		c, p := best(sc[i*d.cols+1:(i+1)*d.cols], thr)
		if c < 0 {
			continue
		}
		q := bx[i*4 : i*4+4]
		dst = add(dst, c, p, q[0]*iw, q[1]*ih, q[2]*iw, q[3]*ih)
	}
	return d.finish(dst, start, tr)
}
