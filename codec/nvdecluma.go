package codec

import (
	"fmt"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
)

// lumaRows copies the luma rows an activity gate samples from an NVDEC decoder's frames to the
// host (activity.LumaSampler), on the decoder's stream, through one pinned buffer grown as
// needed: at 1080p one row per 12×12 block, 1920×90 = 173 KB per frame checked instead of the
// 2 MB luma plane (or 3 MB NV12 picture).
type lumaRows struct {
	stream *cuda.Stream
	host   *cuda.HostBuffer
}

// SampleLuma copies rows rows of width bytes of f's luma plane, starting at row first and
// every every rows, into dst (packed), and waits for the copy: activity.LumaSampler. Call it
// from the goroutine that decodes, while it holds f (the pipeline's gate does, in emit).
func (b *avFrame) SampleLuma(f *frame.Frame, dst []byte, first, every, width, rows int) error {
	if err := sampleGeometry(f, len(dst), first, every, width, rows); err != nil {
		return err
	}
	l := b.lum
	if l == nil || b.dev == nil {
		return fmt.Errorf("%w (no sampling stream)", frame.ErrOnDevice)
	}
	n := width * rows
	if l.host == nil || len(l.host.Bytes) < n {
		if l.host != nil {
			l.host.Free()
			l.host = nil
		}
		h, err := b.dev.AllocHost(n)
		if err != nil {
			return err
		}
		l.host = h
	}
	src := cuda.Ptr(f.DevicePlanes[0]).Add(first * f.Strides[0])
	if err := l.stream.CopyDtoH2D(l.host, 0, width, src, every*f.Strides[0], width, rows); err != nil {
		return err
	}
	if err := l.stream.Synchronize(); err != nil {
		return err
	}
	copy(dst, l.host.Bytes[:n])
	return nil
}

// sampleGeometry checks a SampleLuma request against f (an NV12 picture in device memory)
// and the destination's size.
func sampleGeometry(f *frame.Frame, dst, first, every, width, rows int) error {
	switch {
	case f.Format != frame.FormatNV12 || f.DevicePlanes[0] == 0:
		return fmt.Errorf("%w: not an NVDEC picture (%s)", frame.ErrOnDevice, f.Format)
	case rows <= 0 || width <= 0 || every <= 0 || first < 0:
		return fmt.Errorf("codec: SampleLuma of %d rows of %d bytes every %d from %d", rows, width, every, first)
	case width > f.Width || first+(rows-1)*every >= f.Height || f.Strides[0] < f.Width:
		return fmt.Errorf("codec: SampleLuma rows %d+%d·%d of %d bytes outside a %dx%d picture", first, rows-1, every, width, f.Width, f.Height)
	case dst < width*rows:
		return fmt.Errorf("codec: SampleLuma of %d bytes into %d", width*rows, dst)
	}
	return nil
}

func (l *lumaRows) free() {
	if l != nil && l.host != nil {
		l.host.Free()
		l.host = nil
	}
}
