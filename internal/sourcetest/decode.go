package sourcetest

import (
	"context"
	"errors"
	"testing"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// FrameCounter decodes a source's access units twice: as FFmpeg's command line does (pictures
// with concealed errors included: All) and as vinfer's pipeline does by default (those
// dropped: Clean).
type FrameCounter struct {
	all, clean *codec.Decoder
	All, Clean int
}

// NewFrameCounter opens the two decoders; they are closed when the test ends.
func NewFrameCounter(t testing.TB, c media.Codec) *FrameCounter {
	t.Helper()
	fc := &FrameCounter{all: &codec.Decoder{Codec: c, OutputCorrupt: true}, clean: &codec.Decoder{Codec: c}}
	for _, d := range []*codec.Decoder{fc.all, fc.clean} {
		if err := d.Init(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { d.Close() })
	}
	return fc
}

// Decode decodes au; nil flushes the decoders at the end of the stream.
func (fc *FrameCounter) Decode(t testing.TB, au *media.AccessUnit) {
	t.Helper()
	ctx := context.Background()
	for _, x := range []struct {
		d *codec.Decoder
		n *int
	}{{fc.all, &fc.All}, {fc.clean, &fc.Clean}} {
		emit := func(f *frame.Frame) error { *x.n++; f.Release(); return nil }
		var err error
		if au == nil {
			err = x.d.Flush(ctx, emit)
		} else {
			err = x.d.Decode(ctx, au, emit)
		}
		if err != nil && !errors.Is(err, codec.ErrCorrupt) {
			t.Fatal(err)
		}
	}
}
