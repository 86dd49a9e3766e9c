// Package detect decodes object-detection model outputs into boxes, per model family, and
// suppresses duplicates (NMS). Decoders allocate nothing per frame once warmed up: each keeps
// scratch space and appends to the caller's slice.
package detect

import (
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/tensor"
)

// Detection is one detected object.
type Detection struct {
	ClassID int     `json:"class_id"`
	Label   string  `json:"label"`
	Score   float32 `json:"score"`
	// Box is [x1,y1,x2,y2] in source-frame pixels.
	Box [4]float32 `json:"box"`
}

// Family is an output layout.
type Family string

// Model families.
const (
	// FamilyYOLOX: one output [N,A,5+C], A = Σ (H/s)(W/s) for s = 8,16,32; rows raw xy offset,
	// raw log wh, objectness and class probabilities (sigmoid applied in the graph).
	FamilyYOLOX Family = "yolox"
	// FamilyFastestDet: one output [N,5+C,H/16,W/16]: objectness, tanh-offset, sigmoid-size as a
	// fraction of the image, softmaxed class probabilities.
	FamilyFastestDet Family = "fastestdet"
	// FamilyUltraFace: scores [N,P,2] (softmax over background, face) and corner-form boxes
	// [N,P,4] normalised to 0…1, decoded in the graph.
	FamilyUltraFace Family = "ultraface"
	// FamilyYOLOv5: one output [N,3·Σ(H/s)(W/s),5+C] of cx,cy,w,h in input pixels, objectness and
	// class probabilities (Ultralytics export, sigmoid applied).
	FamilyYOLOv5 Family = "yolov5"
	// FamilyYOLOv8 (also YOLOv11): one output [N,4+C,A]: cx,cy,w,h in input pixels and class
	// scores, no objectness, anchors along the last axis.
	FamilyYOLOv8 Family = "yolov8"
	// FamilyNanoDet (NanoDet-Plus): per stride s in 8,16,32, cls_pred_stride_s [N,A_s,C] (sigmoid
	// applied) and dis_pred_stride_s [N,A_s,4·(R+1)] distance distributions.
	FamilyNanoDet Family = "nanodet"
)

// Families lists every supported family.
var Families = []Family{FamilyYOLOX, FamilyFastestDet, FamilyUltraFace, FamilyYOLOv5, FamilyYOLOv8, FamilyNanoDet}

// Params are a decoder's thresholds and class names.
type Params struct {
	// ScoreThreshold drops detections scoring below it.
	ScoreThreshold float32
	// NMSIoU is the IoU above which NMS removes the lower-scored of two boxes.
	NMSIoU float32
	// ClassAgnosticNMS suppresses across classes too.
	ClassAgnosticNMS bool
	// MaxDetections caps detections per frame after NMS (0: 300).
	MaxDetections int
	// Labels name the classes; their count must equal the model's class count when set.
	Labels []string
	// InputWidth and InputHeight of the model input in pixels.
	InputWidth, InputHeight int
	// RegMax is NanoDet's distribution size minus one (default 7).
	RegMax int
}

// Decoder turns the outputs of one batch into detections.
type Decoder interface {
	// Decode appends the detections of batch item b to dst and returns it. outputs are the
	// model's outputs in session order; tr maps model-input pixels to the source frame.
	Decode(outputs []tensor.Tensor, b int, tr preprocess.Transform, dst []Detection) []Detection
	// Classes is the model's class count.
	Classes() int
}

func (p *Params) label(c int) string {
	if c < len(p.Labels) {
		return p.Labels[c]
	}
	return ""
}

func (p *Params) maxDets() int {
	if p.MaxDetections > 0 {
		return p.MaxDetections
	}
	return 300
}

// finish runs NMS on the candidates dst[start:], caps their count and maps boxes to the source.
func (p *Params) finish(dst []Detection, start int, tr preprocess.Transform) []Detection {
	kept := NMS(dst[start:], p.NMSIoU, !p.ClassAgnosticNMS)
	if len(kept) > p.maxDets() {
		kept = kept[:p.maxDets()]
	}
	for i := range kept {
		kept[i].Box = tr.ToSource(kept[i].Box)
		kept[i].Label = p.label(kept[i].ClassID)
	}
	return dst[:start+len(kept)]
}
