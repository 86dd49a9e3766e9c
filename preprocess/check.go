package preprocess

import (
	"fmt"

	"github.com/vinfer/vinfer/frame"
)

// checkFrame reports a frame Run cannot read: nil, on the GPU, of an unknown format or size, or
// with planes shorter than its size and strides require.
func checkFrame(f *frame.Frame) error {
	if f == nil {
		return fmt.Errorf("preprocess: nil frame")
	}
	if f.OnDevice() {
		return ErrDeviceFrame
	}
	w, h := f.Width, f.Height
	if w <= 0 || h <= 0 {
		return fmt.Errorf("preprocess: frame size %dx%d must be positive", w, h)
	}
	cw, ch := (w+1)/2, (h+1)/2
	switch f.Format {
	case frame.FormatBGR24, frame.FormatRGB24:
		return checkPlane(f, 0, 3*w, h)
	case frame.FormatI420:
		if err := checkPlane(f, 0, w, h); err != nil {
			return err
		}
		if err := checkPlane(f, 1, cw, ch); err != nil {
			return err
		}
		return checkPlane(f, 2, cw, ch)
	case frame.FormatNV12:
		if err := checkPlane(f, 0, w, h); err != nil {
			return err
		}
		return checkPlane(f, 1, 2*cw, ch)
	}
	return fmt.Errorf("preprocess: pixel format %v is not supported on the CPU (want i420, nv12, bgr24 or rgb24)", f.Format)
}

// checkPlane checks that plane i holds rows of rowBytes bytes at Strides[i] apart.
func checkPlane(f *frame.Frame, i, rowBytes, rows int) error {
	s := f.Strides[i]
	if s < rowBytes {
		return fmt.Errorf("preprocess: %v %dx%d frame: plane %d stride %d is below its %d-byte rows", f.Format, f.Width, f.Height, i, s, rowBytes)
	}
	if need := s*(rows-1) + rowBytes; len(f.Planes[i]) < need {
		return fmt.Errorf("preprocess: %v %dx%d frame: plane %d holds %d bytes, need %d (%d rows, stride %d)", f.Format, f.Width, f.Height, i, len(f.Planes[i]), need, rows, s)
	}
	return nil
}
