package detect

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vinfer/vinfer/preprocess"
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

// kinds is the family registry, one line per family, each Kind defined in its family's file.
// Its order is the order of Families and of the families an ambiguous layout is reported to
// fit.
var kinds = []Kind{
	yoloxKind,
	fastestDetKind,
	ultraFaceKind,
	yolov5Kind,
	yolov8Kind,
	nanoDetKind,
}

// Kind describes a model family: everything vinfer knows about it, in one place. NewDecoder,
// DefaultParams, ParseFamily, DetectFamily and Families read the registry of Kinds; package
// model takes the preprocessing from it (Lookup).
type Kind struct {
	// Family is the family's configuration word.
	Family Family
	// Aliases are further words ParseFamily accepts for it, lower case ("yolo11" for yolov8).
	Aliases []string
	// Preprocess is the family's published preprocessing, used for every field a model config
	// leaves unset. Width and Height are zero: they come from the model's input.
	Preprocess preprocess.Spec
	// Defaults are the family's published post-processing settings. Zero fields take the
	// common defaults (see DefaultParams); the input size is left to the caller.
	Defaults Params
	// New returns the family's decoder for a model with these outputs (names and shapes as the
	// session declares them, dynamic dimensions -1). p is resolved: every zero field filled,
	// values checked, InputWidth and InputHeight set. It checks the layout against the
	// outputs and says what does not fit.
	New func(outputs []tensor.Info, p Params) (Decoder, error)
	// Match reports whether the outputs have the family's layout for a w×h input; DetectFamily
	// picks the family only when exactly one Kind matches.
	Match func(w, h int, outputs []tensor.Info) bool
	// SizeFree says Match needs no input size: DetectFamily asks it, with w and h 0, also for a
	// model whose input size is unknown. Other Kinds' Match always gets a valid size.
	SizeFree bool
	// Named, when set, reports outputs whose names alone identify the family (legacy NanoDet's
	// cls_pred_stride_*). DetectFamily takes such a model for this family before it looks at
	// shapes or the input size.
	Named func(outputs []tensor.Info) bool
}

// Lookup returns the registered Kind of family f (its slices are copies).
func Lookup(f Family) (Kind, bool) {
	k := lookup(f)
	if k == nil {
		return Kind{}, false
	}
	c := *k
	c.Aliases = slices.Clone(k.Aliases)
	c.Defaults = k.Defaults.clone()
	return c, true
}

// lookup returns the registry's Kind of family f, or nil.
func lookup(f Family) *Kind {
	for i := range kinds {
		if kinds[i].Family == f {
			return &kinds[i]
		}
	}
	return nil
}

// Families lists every supported family, in registry order.
var Families = familyNames()

func familyNames() []Family {
	fs := make([]Family, len(kinds))
	for i, k := range kinds {
		fs[i] = k.Family
	}
	return fs
}

// ParseFamily returns the family named s or by one of its aliases ("yolo11" for yolov8), in
// any case, or an error listing the supported names.
func ParseFamily(s string) (Family, error) {
	w := strings.ToLower(strings.TrimSpace(s))
	for _, k := range kinds {
		if w == string(k.Family) || slices.Contains(k.Aliases, w) {
			return k.Family, nil
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
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k.Family)
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
// as the session declares them, dynamic dimensions -1), asking every registered Kind: a Kind
// whose Named claims the outputs wins; otherwise the one Kind whose Match fits them for the
// input's W×H (the layouts are listed in the package documentation). Anything else, or a
// layout matching two families, gives an error listing the shapes and asking for family: in
// the model config.
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

// detectFamily matches the outputs for a w×h input; sizeErr says why the size is unknown, and
// then only the SizeFree Kinds are asked (with a 0×0 size).
func detectFamily(w, h int, sizeErr error, input string, outputs []tensor.Info) (Family, error) {
	for _, k := range kinds {
		if k.Named != nil && k.Named(outputs) {
			return k.Family, nil
		}
	}
	if sizeErr != nil {
		w, h = 0, 0
	}
	var found []Family
	for _, k := range kinds {
		if (sizeErr == nil || k.SizeFree) && k.Match(w, h, outputs) {
			found = append(found, k.Family)
		}
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

// oneOutput3 returns the dimensions A and K of a single 3-D output [N,A,K], the common shape
// of single-output detectors, for their Match.
func oneOutput3(outs []tensor.Info) (a, k int64, ok bool) {
	if len(outs) != 1 || len(outs[0].Shape) != 3 {
		return 0, 0, false
	}
	return outs[0].Shape[1], outs[0].Shape[2], true
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
