package codec

import (
	"bytes"
	"context"
	"testing"

	"github.com/vinfer/vinfer/frame"
)

// TestNVDECStreamDownload: frames of an NVDECStream (the pipeline's nvdec decoder) copied to the
// host on demand (frame.ToHost, as a snapshot does) from another goroutine while the decoder
// holds its thread equal FFmpeg's software decode, and carry the frame's metadata.
func TestNVDECStreamDownload(t *testing.T) {
	aus, want := clip(t)
	d := device(t)
	const w, h = 768, 432
	dec := &NVDECStream{Device: d, Codec: aus[0].Codec}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := dec.Close(); err != nil {
			t.Error(err)
		}
	}()
	checked := 0
	emit := func(f *frame.Frame) error {
		defer f.Release()
		if f.Index >= 10 || f.Index%3 != 0 {
			return nil
		}
		type got struct {
			f   *frame.Frame
			err error
		}
		ch := make(chan got)
		go func() { h, err := frame.ToHost(f); ch <- got{h, err} }()
		g := <-ch
		if g.err != nil {
			t.Fatal(g.err)
		}
		defer g.f.Release()
		hf := g.f
		if hf.OnDevice() || hf.Index != f.Index || hf.PTS != f.PTS || hf.Width != w || hf.Height != h || hf.Strides != [3]int{w, w} {
			t.Fatalf("host copy %+v of frame %d", hf, f.Index)
		}
		ref := want[int(f.Index)*w*h*3/2 : int(f.Index+1)*w*h*3/2]
		if !bytes.Equal(hf.Planes[0], ref[:w*h]) || !bytes.Equal(hf.Planes[1], ref[w*h:]) {
			t.Errorf("frame %d: the host copy differs from the software decode", f.Index)
		}
		checked++
		return nil
	}
	for i := range 20 {
		if err := dec.Decode(context.Background(), &aus[i], emit); err != nil {
			t.Fatal(err)
		}
	}
	if err := dec.Flush(context.Background(), emit); err != nil {
		t.Fatal(err)
	}
	if checked != 4 {
		t.Fatalf("checked %d frames, want 4", checked)
	}
}
