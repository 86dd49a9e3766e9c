package preprocess

// Placement is where a source picture lands in the model input, in model-input pixels: the
// picture is resized to Width×Height and its top-left corner put at (X, Y); the rest of the
// canvas is padding.
type Placement struct {
	X, Y          int
	Width, Height int
}

// Place computes the placement of a srcW×srcH picture (pixels, both > 0) for the spec.
//
// Letterbox follows YOLOX's reference preprocessing exactly, in float64 like Python:
// r = min(W/w, H/h), resized size (int(w·r), int(h·r)) with truncation (768×432 into 416×416
// gives 416×233, not 234), at least 1 pixel per axis; Align TopLeft puts it at (0,0), Center at
// ((W−nw)/2, (H−nh)/2) rounded down. Stretch fills the whole W×H canvas.
func (s Spec) Place(srcW, srcH int) Placement {
	if s.Resize == Stretch {
		return Placement{Width: s.Width, Height: s.Height}
	}
	r := min(float64(s.Width)/float64(srcW), float64(s.Height)/float64(srcH))
	nw := max(1, min(s.Width, int(float64(srcW)*r)))
	nh := max(1, min(s.Height, int(float64(srcH)*r)))
	p := Placement{Width: nw, Height: nh}
	if s.Align == Center {
		p.X = (s.Width - nw) / 2
		p.Y = (s.Height - nh) / 2
	}
	return p
}

// Transform returns the mapping from model-input pixels back to the srcW×srcH source. The
// scales are the resize's true ones (nw/w, nh/h), which differ from YOLOX's r by less than one
// source pixel across the frame because of the truncation in Place.
func (p Placement) Transform(srcW, srcH int) Transform {
	return Transform{
		ScaleX:    float32(float64(p.Width) / float64(srcW)),
		ScaleY:    float32(float64(p.Height) / float64(srcH)),
		OffsetX:   float32(p.X),
		OffsetY:   float32(p.Y),
		SrcWidth:  srcW,
		SrcHeight: srcH,
	}
}
