package codec

import (
	"errors"
	"testing"

	"github.com/vinfer/vinfer/frame"
)

// TestSampleGeometry: the motion check's row copies out of an NVDEC picture stay inside the
// picture and the destination (no GPU needed: the requests are checked before any copy).
func TestSampleGeometry(t *testing.T) {
	f := &frame.Frame{Format: frame.FormatNV12, Width: 1920, Height: 1080, DevicePlanes: [3]uintptr{0x1000, 0x2000}, Strides: [3]int{2048, 2048}}
	host := &frame.Frame{Format: frame.FormatI420, Width: 1920, Height: 1080}
	for _, c := range []struct {
		name                           string
		f                              *frame.Frame
		dst, first, every, width, rows int
		ok, onDevice                   bool
	}{
		{"1080p, 160×90 blocks of 12", f, 1920 * 90, 6, 12, 1920, 90, true, false},
		{"last row past the picture", f, 1920 * 91, 6, 12, 1920, 91, false, false},
		{"wider than the picture", f, 4000 * 90, 6, 12, 4000, 90, false, false},
		{"destination too small", f, 100, 6, 12, 1920, 90, false, false},
		{"no rows", f, 0, 6, 12, 1920, 0, false, false},
		{"a host frame", host, 1920 * 90, 6, 12, 1920, 90, false, true},
	} {
		err := sampleGeometry(c.f, c.dst, c.first, c.every, c.width, c.rows)
		if (err == nil) != c.ok || errors.Is(err, frame.ErrOnDevice) != c.onDevice {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	var b avFrame // no decoder: refused before any CUDA call
	if err := b.SampleLuma(f, make([]byte, 1920*90), 6, 12, 1920, 90); !errors.Is(err, frame.ErrOnDevice) {
		t.Errorf("SampleLuma without a decoder: %v", err)
	}
}
