package preprocess

import (
	"fmt"
	"math"

	"github.com/vinfer/vinfer/internal/enum"
)

// ColorOrder is the channel order a model expects.
type ColorOrder uint8

// Channel orders.
const (
	BGR ColorOrder = iota // OpenCV's order (cv2.imread)
	RGB
)

// ResizeMode is how a frame is fitted into the model's input.
type ResizeMode uint8

// Resize modes.
const (
	// Letterbox keeps the aspect ratio: scale r = min(W/w, H/h), the rest padded with Pad.
	Letterbox ResizeMode = iota
	// Stretch resizes to exactly W×H, changing the aspect ratio.
	Stretch
)

// Align places a letterboxed picture in the canvas.
type Align uint8

// Letterbox alignments.
const (
	TopLeft Align = iota // picture at (0,0), padding right and bottom (YOLOX)
	Center               // padding split evenly on both sides (YOLOv5/v8)
)

// Interp is the resampling filter.
type Interp uint8

// Resampling filters.
const (
	Bilinear Interp = iota // OpenCV INTER_LINEAR (half-pixel centres)
	Area                   // OpenCV INTER_AREA: box average when shrinking, bilinear when enlarging
)

// Spec is a model's preprocessing. Each output value is (pixel·Scale − Mean[c]) / Std[c], with c
// in the output channel order (Color).
type Spec struct {
	// Width and Height of the model input in pixels.
	Width, Height int
	Color         ColorOrder
	Resize        ResizeMode
	Align         Align
	Interp        Interp
	// Pad is the 0–255 value of letterbox padding, before normalization (114 for YOLOX).
	Pad   uint8
	Scale float32
	Mean  [3]float32
	Std   [3]float32
}

// maxSide bounds the model input's sides (pixels), far above any detector's.
const maxSide = 1 << 14

// Validate reports a spec that cannot work: a size that is not positive or above 16384, an
// unknown enum value, a zero or non-finite Scale or Std, a non-finite Mean.
func (s Spec) Validate() error {
	if s.Width <= 0 || s.Height <= 0 || s.Width > maxSide || s.Height > maxSide {
		return fmt.Errorf("preprocess: input size %dx%d must be positive and at most %d", s.Width, s.Height, maxSide)
	}
	if s.Color > RGB || s.Resize > Stretch || s.Align > Center || s.Interp > Area {
		return fmt.Errorf("preprocess: unknown color order, resize mode, alignment or filter in %+v", s)
	}
	finite := func(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
	for c := 0; c < 3; c++ {
		if s.Std[c] == 0 || !finite(s.Std[c]) {
			return fmt.Errorf("preprocess: std[%d] is %v; it must be finite and non-zero (use 1 for none)", c, s.Std[c])
		}
		if !finite(s.Mean[c]) {
			return fmt.Errorf("preprocess: mean[%d] is %v", c, s.Mean[c])
		}
	}
	if s.Scale == 0 || !finite(s.Scale) {
		return fmt.Errorf("preprocess: scale is %v; it must be finite and non-zero (1 for raw 0–255, 1/255 for 0–1)", s.Scale)
	}
	return nil
}

var (
	colorNames  = []string{"bgr", "rgb"}
	resizeNames = []string{"letterbox", "stretch"}
	alignNames  = []string{"top-left", "center"}
	interpNames = []string{"bilinear", "area"}
)

func (c ColorOrder) String() string { return enum.Name(c, colorNames) }
func (m ResizeMode) String() string { return enum.Name(m, resizeNames) }
func (a Align) String() string      { return enum.Name(a, alignNames) }
func (i Interp) String() string     { return enum.Name(i, interpNames) }

// MarshalText implements encoding.TextMarshaler: bgr or rgb.
func (c ColorOrder) MarshalText() ([]byte, error) { return enum.Text("color", c, colorNames) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *ColorOrder) UnmarshalText(b []byte) (err error) {
	*c, err = enum.Parse[ColorOrder]("color", colorNames, b)
	return err
}

// MarshalText implements encoding.TextMarshaler: letterbox or stretch.
func (m ResizeMode) MarshalText() ([]byte, error) { return enum.Text("resize", m, resizeNames) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (m *ResizeMode) UnmarshalText(b []byte) (err error) {
	*m, err = enum.Parse[ResizeMode]("resize", resizeNames, b)
	return err
}

// MarshalText implements encoding.TextMarshaler: top-left or center.
func (a Align) MarshalText() ([]byte, error) { return enum.Text("align", a, alignNames) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Align) UnmarshalText(b []byte) (err error) {
	*a, err = enum.Parse[Align]("align", alignNames, b)
	return err
}

// MarshalText implements encoding.TextMarshaler: bilinear or area.
func (i Interp) MarshalText() ([]byte, error) { return enum.Text("interp", i, interpNames) }

// UnmarshalText implements encoding.TextUnmarshaler.
func (i *Interp) UnmarshalText(b []byte) (err error) {
	*i, err = enum.Parse[Interp]("interp", interpNames, b)
	return err
}

// Transform maps model-input coordinates back to source-frame pixels:
// src = (net − Offset) / Scale, per axis, clamped to the frame.
type Transform struct {
	ScaleX, ScaleY   float32
	OffsetX, OffsetY float32
	// SrcWidth and SrcHeight of the source frame in pixels.
	SrcWidth, SrcHeight int
}

// ToSource maps a box [x1,y1,x2,y2] in model-input pixels to source pixels, clamped to the frame.
func (t Transform) ToSource(b [4]float32) [4]float32 {
	w, h := float32(t.SrcWidth), float32(t.SrcHeight)
	return [4]float32{
		clamp((b[0]-t.OffsetX)/t.ScaleX, 0, w),
		clamp((b[1]-t.OffsetY)/t.ScaleY, 0, h),
		clamp((b[2]-t.OffsetX)/t.ScaleX, 0, w),
		clamp((b[3]-t.OffsetY)/t.ScaleY, 0, h),
	}
}

func clamp(v, lo, hi float32) float32 {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}
