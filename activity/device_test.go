package activity

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/vinfer/vinfer/frame"
)

// deviceLuma is a frame backing standing for an NVDEC surface: the picture is not in the
// frame's planes; SampleLuma copies the sampled rows out of it (the host picture here) as
// codec's NVDEC frames copy them out of device memory.
type deviceLuma struct {
	src   *frame.Frame
	calls int
	fail  bool
}

func (d *deviceLuma) Reset() {}
func (d *deviceLuma) Free()  {}

func (d *deviceLuma) SampleLuma(f *frame.Frame, dst []byte, first, every, width, rows int) error {
	d.calls++
	if d.fail {
		return errors.New("copy failed")
	}
	for y := 0; y < rows; y++ {
		r := (first + y*every) * d.src.Strides[0]
		copy(dst[y*width:(y+1)*width], d.src.Planes[0][r:r+width])
	}
	return nil
}

// TestGateDeviceFrames: frames whose pixels stay in device memory (NVDEC's) are gated, go
// idle and wake exactly as host frames do, from the luma rows their backing samples (one row
// per block, not the whole plane); a device frame whose rows cannot be read is taken for
// motion (inferred) and counted, never gated blind.
func TestGateDeviceFrames(t *testing.T) {
	onset := 30*time.Second + 400*time.Millisecond
	c := clip{gop: time.Second, moving: func(p time.Duration) bool { return p >= onset && p < 33*time.Second }}
	host := newSim(t, settings(true), c)
	host.run(0, 40*time.Second)

	dev := newSim(t, settings(true), c)
	lum := &deviceLuma{src: dev.f}
	dev.frame = &frame.Frame{Format: frame.FormatNV12, Width: dev.f.Width, Height: dev.f.Height, Backing: lum}
	dev.run(0, 40*time.Second)
	if !slices.Equal(dev.inferred, host.inferred) || dev.decoded != host.decoded {
		t.Errorf("device frames: decoded %d, inferred %v;\nhost frames: decoded %d, inferred %v", dev.decoded, dev.inferred, host.decoded, host.inferred)
	}
	a := dev.g.Snapshot("idle")
	if lum.calls < dev.decoded-10 || lum.calls > dev.decoded || a.Wakes != 1 || dev.g.Unsampled() != 0 {
		t.Errorf("sampled %d of %d frames, snapshot %+v, unsampled %d", lum.calls, dev.decoded, a, dev.g.Unsampled())
	}

	lum.fail = true
	dev.frame.PTS = 41 * time.Second
	if v := dev.g.Frame(dev.frame); v != Infer || dev.g.Unsampled() != 1 {
		t.Errorf("unreadable device frame: verdict %v, unsampled %d; want inferred, counted", v, dev.g.Unsampled())
	}
	if n := testing.AllocsPerRun(50, func() { lum.fail = false; dev.frame.PTS += time.Second / fps; dev.g.Frame(dev.frame) }); n != 0 {
		t.Errorf("%v allocations per device frame", n)
	}
}
