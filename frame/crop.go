package frame

// CropInto makes dst a view of the rectangle (x, y, w, h) of f, in pixels, sharing f's memory
// (no copy). The rectangle is clipped to the frame and, for 4:2:0 formats, x and y are rounded
// down to even so chroma stays aligned; dst's Width/Height give the size actually used and the
// returned x0, y0 its top-left corner in f. dst is not pooled: never Release it, and use it only
// while f is held. ok is false for an empty rectangle or a device frame.
func (f *Frame) CropInto(dst *Frame, x, y, w, h int) (x0, y0 int, ok bool) {
	x2, y2 := min(x+w, f.Width), min(y+h, f.Height)
	x, y = max(x, 0), max(y, 0)
	if f.Format == FormatI420 || f.Format == FormatNV12 {
		x, y = x&^1, y&^1
	}
	if x2 <= x || y2 <= y || f.OnDevice() {
		return 0, 0, false
	}
	*dst = Frame{Format: f.Format, Width: x2 - x, Height: y2 - y, Strides: f.Strides, FullRange: f.FullRange,
		PTS: f.PTS, Wallclock: f.Wallclock, Index: f.Index, Device: -1}
	switch f.Format {
	case FormatBGR24, FormatRGB24:
		dst.Planes[0] = f.Planes[0][y*f.Strides[0]+3*x:]
	case FormatI420:
		dst.Planes[0] = f.Planes[0][y*f.Strides[0]+x:]
		dst.Planes[1] = f.Planes[1][y/2*f.Strides[1]+x/2:]
		dst.Planes[2] = f.Planes[2][y/2*f.Strides[2]+x/2:]
	case FormatNV12:
		dst.Planes[0] = f.Planes[0][y*f.Strides[0]+x:]
		dst.Planes[1] = f.Planes[1][y/2*f.Strides[1]+x:]
	default:
		return 0, 0, false
	}
	return x, y, true
}
