package frame

import (
	"errors"
	"testing"
)

// fakeDevice is a Backing that "downloads" by copying a host picture it holds.
type fakeDevice struct {
	y, uv []byte
	calls int
}

func (b *fakeDevice) Reset() {}
func (b *fakeDevice) Free()  {}
func (b *fakeDevice) Download(f *Frame) (*Frame, error) {
	b.calls++
	h := NewHost()
	h.Format, h.Width, h.Height, h.Index, h.PTS = f.Format, f.Width, f.Height, f.Index, f.PTS
	h.Planes = [3][]byte{append([]byte(nil), b.y...), append([]byte(nil), b.uv...)}
	h.Strides = [3]int{f.Width, f.Width}
	return h, nil
}

func TestToHost(t *testing.T) {
	host := NewHost()
	host.Planes[0] = []byte{1}
	got, err := ToHost(host)
	if err != nil || got != host || host.Refs() != 2 {
		t.Fatalf("host frame: %v %v refs %d", got, err, host.Refs())
	}
	got.Release()
	host.Release()
	if host.Planes[0] != nil {
		t.Fatal("last Release kept the planes")
	}

	b := &fakeDevice{y: make([]byte, 4*2), uv: make([]byte, 4)}
	dev := &Frame{Format: FormatNV12, Width: 4, Height: 2, Device: 0, DevicePlanes: [3]uintptr{0x1000, 0x2000}, Index: 7, Backing: b}
	dev.refs.Store(1)
	got, err = ToHost(dev)
	if err != nil || got == dev || got.OnDevice() || got.Index != 7 || len(got.Planes[0]) != 8 || b.calls != 1 || dev.Refs() != 1 {
		t.Fatalf("device frame: %+v %v", got, err)
	}
	got.Release()

	dev.Backing = nil
	if _, err := ToHost(dev); !errors.Is(err, ErrOnDevice) {
		t.Fatalf("no downloader: %v", err)
	}
}
