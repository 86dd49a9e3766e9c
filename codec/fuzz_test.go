package codec_test

import (
	"context"
	"errors"
	"testing"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
)

// FuzzDecode feeds arbitrary bytes to an H.264 decoder after the first GOP of a real clip, as a
// damaged or hostile stream would: Decode may report ErrCorrupt but never another error, never
// panics, and every frame it emits has planes that cover the picture.
func FuzzDecode(f *testing.F) {
	info, aus := accessUnits(f, asset(f, "videos/car-detection.mp4"))
	for _, au := range aus[:6] {
		f.Add(au.Data, au.Key)
	}
	f.Add([]byte{0, 0, 0, 1, 0x65, 0xff, 0xff, 0xff}, true)
	f.Add([]byte{0, 0, 1, 0x67, 0x64, 0, 0x1f, 0xff, 0, 0, 1, 0x68}, true)
	f.Fuzz(func(t *testing.T, data []byte, key bool) {
		dec := &codec.Decoder{Codec: info.Codec, Frames: 2}
		if err := dec.Init(); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		emit := func(fr *frame.Frame) error {
			if fr.Width <= 0 || fr.Height <= 0 || len(fr.Planes[0]) < fr.Strides[0]*fr.Height {
				t.Fatalf("frame %dx%d with a %d-byte luma plane", fr.Width, fr.Height, len(fr.Planes[0]))
			}
			fr.Release()
			return nil
		}
		stream := append([]media.AccessUnit{}, aus[:3]...)
		stream = append(stream, media.AccessUnit{Codec: info.Codec, Data: data, Key: key, PTS: aus[3].PTS, DTS: aus[3].DTS})
		stream = append(stream, aus[3:5]...)
		for i := range stream {
			if err := dec.Decode(ctx, &stream[i], emit); err != nil && !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("access unit %d: %v", i, err)
			}
		}
		if err := dec.Flush(ctx, emit); err != nil && !errors.Is(err, codec.ErrCorrupt) {
			t.Fatal(err)
		}
		if err := dec.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
