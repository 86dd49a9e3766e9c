package detect

import (
	"fmt"
	"strings"

	"github.com/vinfer/vinfer/tensor"
)

// Family names a model output layout (see the package documentation).
type Family string

// Supported families.
const (
	FamilyYOLOX      Family = "yolox"
	FamilyFastestDet Family = "fastestdet"
	FamilyUltraFace  Family = "ultraface"
	FamilyYOLOv5     Family = "yolov5"
	// FamilyYOLOv8 also covers YOLO11, which has the same output layout.
	FamilyYOLOv8  Family = "yolov8"
	FamilyNanoDet Family = "nanodet"
)

// Families lists every supported family.
var Families = []Family{FamilyYOLOX, FamilyFastestDet, FamilyUltraFace, FamilyYOLOv5, FamilyYOLOv8, FamilyNanoDet}

// ParseFamily returns the family named s ("yolo11" is accepted for yolov8), or an error listing
// the supported names.
func ParseFamily(s string) (Family, error) {
	f := Family(strings.ToLower(strings.TrimSpace(s)))
	if f == "yolo11" || f == "yolov11" {
		return FamilyYOLOv8, nil
	}
	for _, g := range Families {
		if f == g {
			return f, nil
		}
	}
	return "", fmt.Errorf("detect: unknown model family %q: use one of %s", s, familyList())
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseFamily; an empty word leaves the
// family unset (auto-detected from the model's outputs).
func (f *Family) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*f = ""
		return nil
	}
	v, err := ParseFamily(string(b))
	if err != nil {
		return err
	}
	*f = v
	return nil
}

func familyList() string {
	s := make([]string, len(Families))
	for i, f := range Families {
		s[i] = string(f)
	}
	return strings.Join(s, ", ")
}

// InputSize returns the width and height in pixels of an NCHW image input [N,3,H,W], or an error
// when the input is not 4-D or its spatial size is dynamic.
func InputSize(in tensor.Info) (w, h int, err error) {
	if w, h, err = inputSize(in); err != nil {
		return 0, 0, fmt.Errorf("detect: %w", err)
	}
	return w, h, nil
}

func inputSize(in tensor.Info) (w, h int, err error) {
	if len(in.Shape) != 4 {
		return 0, 0, fmt.Errorf("model input %s %v is not an NCHW image [N,3,H,W]", in.Name, in.Shape)
	}
	if in.Shape[2] <= 0 || in.Shape[3] <= 0 {
		return 0, 0, fmt.Errorf("model input %s %v has a dynamic size: export the model with a fixed input size", in.Name, in.Shape)
	}
	return int(in.Shape[3]), int(in.Shape[2]), nil
}

// DetectFamily infers the output layout from the model's inputs and outputs (names and shapes
// as the session declares them, dynamic dimensions -1). It recognises, for an input of W×H:
//
//	nanodet     outputs named cls_pred_stride_* (legacy NanoDet), or one [N,A,C+32] output with
//	            A = Σ cells of strides 8,16,32,64 (NanoDet-Plus with reg_max 7)
//	yolox       one [N,A,5+C] with A = Σ cells of strides 8,16,32
//	yolov5      one [N,3A,5+C] (three anchors per cell), or three raw heads
//	yolov8      one [N,4+C,A] (anchors last)
//	fastestdet  one [N,5+C,⌈H/16⌉,⌈W/16⌉]
//	ultraface   two [N,P,K] and [N,P,4] (K ≥ 2)
//
// where the cells of stride s are ⌈H/s⌉·⌈W/s⌉. Anything else, or a shape matching two
// families, gives an error listing the shapes and asking for family: in the model config.
func DetectFamily(inputs, outputs []tensor.Info) (Family, error) {
	w, h, err := 0, 0, fmt.Errorf("the model has no input")
	if len(inputs) > 0 {
		w, h, err = inputSize(inputs[0])
	}
	return detectFamily(w, h, err, fmt.Sprintf("input %s", describe(inputs)), outputs)
}

// DetectFamilyAt is DetectFamily for a w×h input: for models whose input size is dynamic and
// set in the model config.
func DetectFamilyAt(w, h int, outputs []tensor.Info) (Family, error) {
	var err error
	if w <= 0 || h <= 0 {
		err = fmt.Errorf("the input size %dx%d is not set", w, h)
	}
	return detectFamily(w, h, err, fmt.Sprintf("input %dx%d", w, h), outputs)
}

// detectFamily matches the outputs for a w×h input; sizeErr says why the size is unknown.
func detectFamily(w, h int, sizeErr error, input string, outputs []tensor.Info) (Family, error) {
	for _, o := range outputs {
		if strings.HasPrefix(o.Name, "cls_pred_stride_") {
			return FamilyNanoDet, nil
		}
	}
	var found []Family
	if sizeErr == nil {
		found = matchShapes(w, h, outputs)
	} else if isUltraFace(outputs) {
		found = []Family{FamilyUltraFace}
	}
	if len(found) == 1 {
		return found[0], nil
	}
	var why string
	switch {
	case len(found) > 1:
		why = fmt.Sprintf("they fit %v alike", found)
	case sizeErr != nil:
		why = sizeErr.Error()
	default:
		why = "no supported layout fits them"
	}
	return "", fmt.Errorf("detect: cannot tell the model family from its outputs %s (%s): %s; set family: in the model config (%s)",
		describe(outputs), input, why, familyList())
}

// matchShapes returns every family whose layout fits the outputs for a w×h input.
func matchShapes(w, h int, outs []tensor.Info) []Family {
	cells3 := int64(cellCount(w, h, []int{8, 16, 32}))
	cells4 := int64(cellCount(w, h, []int{8, 16, 32, 64}))
	var found []Family
	switch len(outs) {
	case 1:
		sh := outs[0].Shape
		if len(sh) == 4 && sh[1] > 5 && sh[2] == int64(ceilDiv(h, 16)) && sh[3] == int64(ceilDiv(w, 16)) {
			found = append(found, FamilyFastestDet)
		}
		if len(sh) != 3 {
			break
		}
		a, k := sh[1], sh[2]
		if a == cells3 && k > 5 {
			found = append(found, FamilyYOLOX)
		}
		if a == 3*cells3 && k > 5 {
			found = append(found, FamilyYOLOv5)
		}
		if a == cells4 && k > 32 {
			found = append(found, FamilyNanoDet)
		}
		if k == cells3 && a > 4 {
			found = append(found, FamilyYOLOv8)
		}
	case 2:
		if isUltraFace(outs) {
			found = append(found, FamilyUltraFace)
		}
	case 3:
		if _, err := yolov5Heads(outs, w, h, []int{8, 16, 32}, cocoAnchors); err == nil {
			found = append(found, FamilyYOLOv5)
		}
	}
	return found
}

// isUltraFace reports two 3-D outputs with the same prior count, one of them [N,P,4].
func isUltraFace(outs []tensor.Info) bool {
	if len(outs) != 2 {
		return false
	}
	_, _, err := ultraFaceOutputs(outs)
	return err == nil
}

func describe(infos []tensor.Info) string {
	if len(infos) == 0 {
		return "(none)"
	}
	s := make([]string, len(infos))
	for i, o := range infos {
		s[i] = fmt.Sprintf("%s %v", o.Name, o.Shape)
	}
	return strings.Join(s, ", ")
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// cellCount is Σ_s ⌈h/s⌉·⌈w/s⌉, the anchor points of a multi-stride head.
func cellCount(w, h int, strides []int) int {
	n := 0
	for _, s := range strides {
		n += ceilDiv(w, s) * ceilDiv(h, s)
	}
	return n
}
