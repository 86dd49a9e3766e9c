package codec

import (
	"bytes"
	"fmt"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
)

var _ frame.Downloader = (*avFrame)(nil)

// Download copies an NVDEC frame's NV12 picture to host memory on demand (frame.Downloader; a
// snapshot of an nvdec stream): on a CUDA stream of its own, after the frame's Ready event, two
// pitched copies (Y, then interleaved UV) into pinned memory, waited for, then into Go memory
// (packed: strides w and 2⌈w/2⌉). It costs one pinned allocation of the picture's size
// (~3 MB at 1080p) and a stream per call, nothing on the frame path; the copies are counted in
// cuda.Stats. Any goroutine may call it while holding f.
func (b *avFrame) Download(f *frame.Frame) (*frame.Frame, error) {
	if b.dev == nil || f.Format != frame.FormatNV12 || f.Width <= 0 || f.Height <= 0 {
		return nil, fmt.Errorf("%w (%s %dx%d)", frame.ErrOnDevice, f.Format, f.Width, f.Height)
	}
	w, h := f.Width, f.Height
	cw, ch := 2*((w+1)/2), (h+1)/2
	ySize := w * h
	host, err := b.dev.AllocHost(ySize + cw*ch)
	if err != nil {
		return nil, err
	}
	defer host.Free()
	err = b.dev.RunLocked(func() error {
		s, err := b.dev.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		if ev, ok := f.Ready.(*cuda.Event); ok {
			if err := s.Wait(ev); err != nil {
				return err
			}
		}
		if err := s.CopyDtoH2D(host, 0, w, cuda.Ptr(f.DevicePlanes[0]), f.Strides[0], w, h); err != nil {
			return err
		}
		if err := s.CopyDtoH2D(host, ySize, cw, cuda.Ptr(f.DevicePlanes[1]), f.Strides[1], cw, ch); err != nil {
			return err
		}
		return s.Synchronize()
	})
	if err != nil {
		return nil, fmt.Errorf("codec: copying an NVDEC frame to the host: %w", err)
	}
	buf := bytes.Clone(host.Bytes)
	out := frame.NewHost()
	out.Format, out.Width, out.Height, out.FullRange = frame.FormatNV12, w, h, f.FullRange
	out.PTS, out.Wallclock, out.Index = f.PTS, f.Wallclock, f.Index
	out.Planes = [3][]byte{buf[:ySize:ySize], buf[ySize:]}
	out.Strides = [3]int{w, cw}
	return out, nil
}
