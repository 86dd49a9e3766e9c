package analytics

// Anchor names the point of a box [x1,y1,x2,y2] that zones and lines test.
type Anchor string

// Anchors.
const (
	BottomCenter Anchor = "bottom-center" // ((x1+x2)/2, y2), the default: where a person stands
	Center       Anchor = "center"        // ((x1+x2)/2, (y1+y2)/2)
	TopCenter    Anchor = "top-center"    // ((x1+x2)/2, y1)
	TopLeft      Anchor = "top-left"      // (x1, y1)
	TopRight     Anchor = "top-right"     // (x2, y1)
	BottomLeft   Anchor = "bottom-left"   // (x1, y2)
	BottomRight  Anchor = "bottom-right"  // (x2, y2)
	CenterLeft   Anchor = "center-left"   // (x1, (y1+y2)/2)
	CenterRight  Anchor = "center-right"  // (x2, (y1+y2)/2)
)

// Anchors lists the valid anchors.
var Anchors = []Anchor{BottomCenter, Center, TopCenter, TopLeft, TopRight, BottomLeft, BottomRight, CenterLeft, CenterRight}

// fractions returns the anchor's position in the box as fractions of its width and height;
// ok is false for an unknown anchor. "" is BottomCenter.
func (a Anchor) fractions() (fx, fy float64, ok bool) {
	switch a {
	case "", BottomCenter:
		return 0.5, 1, true
	case Center:
		return 0.5, 0.5, true
	case TopCenter:
		return 0.5, 0, true
	case TopLeft:
		return 0, 0, true
	case TopRight:
		return 1, 0, true
	case BottomLeft:
		return 0, 1, true
	case BottomRight:
		return 1, 1, true
	case CenterLeft:
		return 0, 0.5, true
	case CenterRight:
		return 1, 0.5, true
	}
	return 0, 0, false
}

// Fractions returns the anchor's position in a box as fractions of its width and height
// ("" is BottomCenter); ok is false for an unknown anchor.
func (a Anchor) Fractions() (fx, fy float64, ok bool) { return a.fractions() }
