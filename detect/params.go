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

// DefaultParams returns the published post-processing settings of family f:
//
//	yolox       score 0.3,  IoU 0.45 (YOLOX demo; vinfer's verified references)
//	fastestdet  score 0.65, IoU 0.45 (FastestDet test.py)
//	ultraface   score 0.7,  IoU 0.3  (Ultra-Light-Fast-Generic-Face-Detector detect_imgs.py)
//	yolov5      score 0.25, IoU 0.45 (yolov5 detect.py)
//	yolov8      score 0.25, IoU 0.7  (ultralytics cfg/default.yaml, also YOLO11)
//	nanodet     score 0.35, IoU 0.6, at most 100 (nanodet demo threshold, head NMS settings)
//
// with COCO-80 labels (["face"] for UltraFace), at most 300 detections unless stated, and
// NanoDet's RegMax 7. Input size is left to the caller. An unknown family gets 0.25/0.45.
func DefaultParams(f Family) Params {
	p := Params{ScoreThreshold: 0.25, NMSIoU: 0.45, MaxDetections: 300, Labels: COCO80(), LabelsFile: coco80Source}
	switch f {
	case FamilyYOLOX:
		p.ScoreThreshold = 0.3
	case FamilyFastestDet:
		p.ScoreThreshold = 0.65
	case FamilyUltraFace:
		p.ScoreThreshold, p.NMSIoU = 0.7, 0.3
		p.Labels, p.LabelsFile = []string{"face"}, "face (built in)"
	case FamilyYOLOv5:
		for _, a := range cocoAnchors {
			p.Anchors = append(p.Anchors, slices.Clone(a))
		}
	case FamilyYOLOv8:
		p.NMSIoU = 0.7
	case FamilyNanoDet:
		p.ScoreThreshold, p.NMSIoU, p.MaxDetections = 0.35, 0.6, 100
		p.RegMax = 7
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
