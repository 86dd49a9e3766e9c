package detect

import (
	"fmt"
	"slices"

	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// picoDetKind is PaddleDetection PP-PicoDet exported without its post-processing
// (export.post_process=False), and other Generalized-Focal-Loss heads in that layout.
//
//	outputs     per level of stride s (8,16,32,64; any of 8…128): class scores [N,A_s,C]
//	            (sigmoid in the graph) and box distributions [N,A_s,4(R+1)], A_s = ⌈H/s⌉·⌈W/s⌉,
//	            in any order (paired by A_s; the scores first when C = 4(R+1))
//	preprocess  RGB, stretch, mean 123.675,116.28,103.53, std 58.395,57.12,57.375
//	            (ImageNet, the PicoDet configs' NormalizeImage)
//	defaults    score 0.5 (deploy/python/infer.py threshold), NMS IoU 0.6, at most 100
//	            (MultiClassNMS of the PicoDet configs), reg_max 7
var picoDetKind = Kind{
	Family:  FamilyPicoDet,
	Aliases: []string{"gfl", "pp-picodet"},
	Preprocess: preprocess.Spec{Color: preprocess.RGB, Resize: preprocess.Stretch, Scale: 1,
		Mean: [3]float32{123.675, 116.28, 103.53}, Std: [3]float32{58.395, 57.12, 57.375}},
	Defaults: Params{ScoreThreshold: 0.5, NMSIoU: 0.6, MaxDetections: 100, RegMax: 7},
	New:      newPicoDet,
	Match: func(w, h int, outs []tensor.Info) bool {
		_, err := picoDetLevels(outs, w, h, nil, 7)
		return err == nil
	},
}

// picoStrides are the strides a level's cell count is matched against.
var picoStrides = []int{8, 16, 32, 64, 128}

// picoLevel is one level: its stride and the outputs holding its scores and distributions.
type picoLevel struct{ stride, cls, dis int }

// picoDetLevels pairs the outputs into levels for a w×h input: each stride (from strides, or
// from picoStrides by cell count) has one output [N,A_s,C] and one [N,A_s,4(R+1)]; every
// output is used once and C is the same for all levels.
func picoDetLevels(outs []tensor.Info, w, h int, strides []int, regMax int) ([]picoLevel, error) {
	want := int64(4 * (regMax + 1))
	if len(outs) < 4 || len(outs)%2 != 0 || len(outs) > 2*len(picoStrides) || w <= 0 || h <= 0 {
		return nil, fmt.Errorf("wants 2 outputs per level, at least 2 levels")
	}
	cells := func(s int) int64 { return int64(ceilDiv(w, s) * ceilDiv(h, s)) }
	if strides == nil {
		for _, s := range picoStrides {
			if slices.ContainsFunc(outs, func(o tensor.Info) bool { return len(o.Shape) == 3 && o.Shape[1] == cells(s) }) {
				strides = append(strides, s)
			}
		}
	}
	if len(strides) != len(outs)/2 {
		return nil, fmt.Errorf("the outputs' cell counts fit strides %v, want %d levels", strides, len(outs)/2)
	}
	used := make([]bool, len(outs))
	var levels []picoLevel
	classes := int64(0)
	for _, s := range strides {
		var idx []int
		for i, o := range outs {
			if !used[i] && fits(o.Shape, -1, cells(s), -1) && known(o.Shape, 1, 0) > 0 && known(o.Shape, 2, 0) > 0 {
				idx = append(idx, i)
			}
		}
		if len(idx) != 2 {
			return nil, fmt.Errorf("stride %d wants 2 outputs [N,%d,…], found %d", s, cells(s), len(idx))
		}
		l := picoLevel{stride: s, cls: idx[0], dis: idx[1]}
		if outs[l.dis].Shape[2] != want {
			l.cls, l.dis = l.dis, l.cls
		}
		c := outs[l.cls].Shape[2]
		if outs[l.dis].Shape[2] != want || (classes != 0 && c != classes) {
			return nil, fmt.Errorf("stride %d wants [N,%d,C] and [N,%d,%d] (reg_max %d), C alike at every level", s, cells(s), cells(s), want, regMax)
		}
		classes = c
		used[l.cls], used[l.dis] = true, true
		levels = append(levels, l)
	}
	return levels, nil
}

// newPicoDet builds a GFL decoder (nanoDet's, with PicoDet's centre priors at ((x+½)·s, (y+½)·s):
// PaddleDetection deploy/cpp picodet_postprocess disPred2Bbox, ct_x = (x + 0.5) * stride).
func newPicoDet(outs []tensor.Info, p Params) (Decoder, error) {
	levels, err := picoDetLevels(outs, p.InputWidth, p.InputHeight, p.Strides, p.RegMax)
	if err != nil {
		return nil, fmt.Errorf("detect: picodet %v: per level of stride s, scores [N,⌈H/s⌉·⌈W/s⌉,C] and distributions [N,⌈H/s⌉·⌈W/s⌉,%d] for a %dx%d input; the model has %s",
			err, 4*(p.RegMax+1), p.InputWidth, p.InputHeight, describe(outs))
	}
	d := &nanoDet{bins: p.RegMax + 1, offset: 0.5, classes: int(outs[levels[0].cls].Shape[2])}
	for _, l := range levels {
		g := grid{stride: l.stride, w: ceilDiv(p.InputWidth, l.stride), h: ceilDiv(p.InputHeight, l.stride)}
		cells := g.w * g.h
		d.levels = append(d.levels, nanoLevel{grid: g, cls: l.cls, dis: l.dis, clsItem: cells * d.classes, disItem: cells * 4 * d.bins,
			clsStride: d.classes, disStride: 4 * d.bins})
	}
	return d, d.init(FamilyPicoDet, p, d.classes)
}
