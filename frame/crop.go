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

// CropDeviceInto is CropInto for an NV12 picture in device memory: dst views the rectangle
// (x, y, w, h) of f's device planes (x and y rounded down to even, the rectangle clipped),
// keeping f's device, pitches and Ready fence. Never Release dst; use it only while f is held.
// ok is false for an empty rectangle, a host frame or another format.
func (f *Frame) CropDeviceInto(dst *Frame, x, y, w, h int) (x0, y0 int, ok bool) {
	x2, y2 := min(x+w, f.Width), min(y+h, f.Height)
	x, y = max(x, 0)&^1, max(y, 0)&^1
	if x2 <= x || y2 <= y || !f.OnDevice() || f.Format != FormatNV12 {
		return 0, 0, false
	}
	*dst = Frame{Format: f.Format, Width: x2 - x, Height: y2 - y, Strides: f.Strides, FullRange: f.FullRange,
		PTS: f.PTS, Wallclock: f.Wallclock, Index: f.Index, Device: f.Device, Ready: f.Ready}
	dst.DevicePlanes[0] = f.DevicePlanes[0] + uintptr(y*f.Strides[0]+x)
	dst.DevicePlanes[1] = f.DevicePlanes[1] + uintptr(y/2*f.Strides[1]+x)
	return x, y, true
}
