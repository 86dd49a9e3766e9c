package detect

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Params configure a decoder. Zero fields take the family's defaults (DefaultParams), except
// Labels: without them classes are named "class_0", "class_1", ….
type Params struct {
	// ScoreThreshold keeps detections scoring above it (0…1).
	ScoreThreshold float32
	// NMSIoU is the IoU above which NMS drops the lower-scored of two boxes (0…1).
	NMSIoU float32
	// ClassAgnosticNMS lets boxes of different classes suppress each other.
	ClassAgnosticNMS bool
	// MaxDetections caps the detections per image after NMS, highest scores first.
	MaxDetections int
	// Labels name the classes, index = class id. When set, their count must equal the model's
	// class count.
	Labels []string
	// LabelsFile says where Labels came from (a path, or "coco80 (built in)"), for error messages.
	LabelsFile string
	// InputWidth and InputHeight are the model input's size in pixels (see InputSize). Required.
	InputWidth, InputHeight int
	// Strides overrides the feature-map strides of grid-based layouts, in output order: YOLOX
	// and raw YOLOv5 heads default to 8,16,32, NanoDet-Plus to 8,16,32,64, legacy NanoDet to
	// its outputs' names. The decoded YOLOv5/YOLOv8 outputs and UltraFace have no grid.
	Strides []int
	// Anchors are the raw YOLOv5 heads' anchor sizes, one list of w,h pairs (input pixels) per
	// head, smallest stride first. Default: the COCO P3–P5 anchors of Ultralytics'
	// models/yolov5s.yaml.
	Anchors [][]float32
	// RegMax is NanoDet's largest distance bin: each box side is a distribution over
	// RegMax+1 bins of one stride each. Default 7.
	RegMax int
}

// cocoAnchors are YOLOv5's default anchors (ultralytics/yolov5 models/yolov5s.yaml), in input
// pixels: P3/8, P4/16, P5/32. Read only: DefaultParams hands out copies.
var cocoAnchors = [][]float32{
	{10, 13, 16, 30, 33, 23},
	{30, 61, 62, 45, 59, 119},
	{116, 90, 156, 198, 373, 326},
}

const coco80Source = "coco80 (built in)"

// Common defaults, for the fields a Kind's Defaults leave zero.
const (
	defaultScore         = 0.25
	defaultNMSIoU        = 0.45
	defaultMaxDetections = 300
)

// DefaultParams returns the published post-processing settings of family f: its Kind's
// Defaults (in the family's file), zero fields taking the common defaults: score threshold
// 0.25, NMS IoU 0.45, at most 300 detections, COCO-80 labels. The input size is left to the
// caller. An unknown family gets the common defaults. The slices are the caller's to keep.
func DefaultParams(f Family) Params {
	var p Params
	if k := lookup(f); k != nil {
		p = k.Defaults.clone()
	}
	if p.ScoreThreshold == 0 {
		p.ScoreThreshold = defaultScore
	}
	if p.NMSIoU == 0 {
		p.NMSIoU = defaultNMSIoU
	}
	if p.MaxDetections == 0 {
		p.MaxDetections = defaultMaxDetections
	}
	if p.Labels == nil {
		p.Labels, p.LabelsFile = COCO80(), coco80Source
	}
	return p
}

// clone returns p with copies of its slices.
func (p Params) clone() Params {
	p.Labels = slices.Clone(p.Labels)
	p.Strides = slices.Clone(p.Strides)
	if p.Anchors != nil {
		a := make([][]float32, len(p.Anchors))
		for i := range a {
			a[i] = slices.Clone(p.Anchors[i])
		}
		p.Anchors = a
	}
	return p
}

// resolve fills zero fields from the family defaults and checks the result.
func (p Params) resolve(f Family) (Params, error) {
	def := DefaultParams(f)
	if p.ScoreThreshold == 0 {
		p.ScoreThreshold = def.ScoreThreshold
	}
	if p.NMSIoU == 0 {
		p.NMSIoU = def.NMSIoU
	}
	if p.MaxDetections == 0 {
		p.MaxDetections = def.MaxDetections
	}
	if p.RegMax == 0 {
		p.RegMax = 7
	}
	if p.Anchors == nil {
		p.Anchors = cocoAnchors
	}
	bad := func(v float32) bool { return !(v >= 0 && v <= 1) }
	switch {
	case bad(p.ScoreThreshold):
		return p, fmt.Errorf("detect: score threshold %v is outside 0…1", p.ScoreThreshold)
	case bad(p.NMSIoU):
		return p, fmt.Errorf("detect: NMS IoU %v is outside 0…1", p.NMSIoU)
	case p.MaxDetections < 0:
		return p, fmt.Errorf("detect: max detections %d is negative", p.MaxDetections)
	case p.RegMax < 0 || p.RegMax > 64:
		return p, fmt.Errorf("detect: reg_max %d is outside 1…64", p.RegMax)
	case p.InputWidth <= 0 || p.InputHeight <= 0 || p.InputWidth > 1<<14 || p.InputHeight > 1<<14:
		return p, fmt.Errorf("detect: model input size %dx%d is not set or out of range: take it from the model's input (InputSize)", p.InputWidth, p.InputHeight)
	}
	for _, s := range p.Strides {
		if s <= 0 || s > 1<<10 {
			return p, fmt.Errorf("detect: stride %d in %v is out of range", s, p.Strides)
		}
	}
	for i, a := range p.Anchors {
		if len(a) == 0 || len(a)%2 != 0 {
			return p, fmt.Errorf("detect: anchors of head %d (%v) must be w,h pairs", i, a)
		}
		for _, v := range a {
			if !(v > 0) || math.IsInf(float64(v), 0) {
				return p, fmt.Errorf("detect: anchors of head %d (%v) must be positive", i, a)
			}
		}
	}
	return p, nil
}

// names returns the class names of a model with n classes: p.Labels, checked against n, or
// generated "class<i>" names.
func (p *Params) names(f Family, n int) ([]string, error) {
	if len(p.Labels) == 0 {
		l := make([]string, n)
		for i := range l {
			l[i] = "class_" + strconv.Itoa(i)
		}
		return l, nil
	}
	if len(p.Labels) != n {
		src := p.LabelsFile
		if src == "" {
			src = "the labels given"
		}
		return nil, fmt.Errorf("detect: %s lists %d class names but the %s model outputs %d classes: set labels: to the model's own labels file (one name per line, %d lines)",
			src, len(p.Labels), f, n, n)
	}
	return p.Labels, nil
}
