package api_test

import (
	"bytes"
	"fmt"
	"image/jpeg"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/testutil"
)

// onDevice is the app with every latest frame handed out as if it were in GPU memory: a frame
// whose planes are device pointers and whose backing "downloads" the real host frame.
type onDevice struct {
	*app.App
	downloads atomic.Int64
	copyable  atomic.Bool
}

func (o *onDevice) LatestFrame(id string) *frame.Frame {
	real := o.App.LatestFrame(id)
	if real == nil {
		return nil
	}
	f := frame.NewHost()
	f.Format, f.Width, f.Height, f.Index, f.PTS = real.Format, real.Width, real.Height, real.Index, real.PTS
	f.Device, f.DevicePlanes = 0, [3]uintptr{0x10000, 0x20000}
	if o.copyable.Load() {
		f.Backing = &fakeDeviceMemory{real: real, n: &o.downloads}
	} else {
		f.Backing = &plainDeviceMemory{real: real}
	}
	return f
}

// fakeDeviceMemory holds the real frame as the "device copy" (frame.Downloader).
type fakeDeviceMemory struct {
	real *frame.Frame
	n    *atomic.Int64
}

func (b *fakeDeviceMemory) Reset() { b.real.Release() }
func (b *fakeDeviceMemory) Free()  {}
func (b *fakeDeviceMemory) Download(f *frame.Frame) (*frame.Frame, error) {
	b.n.Add(1)
	h := frame.NewHost()
	h.Format, h.Width, h.Height, h.Index, h.PTS, h.FullRange = f.Format, f.Width, f.Height, f.Index, f.PTS, b.real.FullRange
	for p := range 3 {
		h.Planes[p] = bytes.Clone(b.real.Planes[p])
	}
	h.Strides = b.real.Strides
	return h, nil
}

// plainDeviceMemory cannot download.
type plainDeviceMemory struct{ real *frame.Frame }

func (b *plainDeviceMemory) Reset() { b.real.Release() }
func (b *plainDeviceMemory) Free()  {}

// TestSnapshotOfDeviceFrame: a stream whose frames are in GPU memory (an nvdec stream) gets its
// snapshot from a host copy made on demand, one copy per snapshot and none in between; a
// device frame that cannot be copied answers 501.
func TestSnapshotOfDeviceFrame(t *testing.T) {
	dev := &onDevice{}
	dev.copyable.Store(true)
	e := startWith(t, "", nil, func(s *api.Server) {
		dev.App = s.App.(*app.App)
		s.App = dev
	})
	video := asset(t, "videos/car-detection.mp4")
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"gpu","source":%q,"model":"yolox","loop":true}`, video), 201, nil)
	testutil.Eventually(t, 60*time.Second, "a decoded frame to snapshot", func() bool {
		resp, _ := e.do("GET", "/api/streams/gpu/snapshot.jpg?wait=0", "")
		return resp.StatusCode != 503
	})
	if n := dev.downloads.Load(); n != 1 {
		t.Fatalf("%d downloads for one snapshot", n)
	}
	resp, b := e.do("GET", "/api/streams/gpu/snapshot.jpg?wait=0", "")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/jpeg" {
		t.Fatalf("snapshot: %s: %s", resp.Status, b)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil || img.Bounds().Dx() != 768 || img.Bounds().Dy() != 432 {
		t.Fatalf("snapshot %v, %v", img.Bounds(), err)
	}
	if _, err := strconv.Atoi(resp.Header.Get("X-Vinfer-Frame")); err != nil {
		t.Fatalf("X-Vinfer-Frame %q", resp.Header.Get("X-Vinfer-Frame"))
	}
	if n := dev.downloads.Load(); n != 2 {
		t.Fatalf("%d downloads for two snapshots", n)
	}
	e.do("GET", "/api/streams", "")
	if n := dev.downloads.Load(); n != 2 {
		t.Fatalf("%d downloads without a snapshot asked", n)
	}

	dev.copyable.Store(false)
	resp, b = e.do("GET", "/api/streams/gpu/snapshot.jpg?wait=0", "")
	if resp.StatusCode != 501 {
		t.Fatalf("device frame without a downloader: %s: %s", resp.Status, b)
	}
}
