package codec_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/asticode/go-astiav"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/file"
)

// quietFFmpeg silences FFmpeg's log for the rest of f: fuzzed input makes it complain at every
// execution.
func quietFFmpeg(f *testing.F) {
	level := astiav.GetLogLevel()
	astiav.SetLogLevel(astiav.LogLevelQuiet)
	f.Cleanup(func() { astiav.SetLogLevel(level) })
}

// FuzzDecode feeds arbitrary bytes to an H.264 decoder after the first GOP of a real clip, as a
// damaged or hostile stream would: Decode may report ErrCorrupt but never another error, never
// panics, and every frame it emits has planes that cover the picture.
func FuzzDecode(f *testing.F) {
	quietFFmpeg(f)
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

// firstAccessUnits reads the first n access units of a file through source/file, copying them.
func firstAccessUnits(t testing.TB, path string, n int) (media.StreamInfo, []media.AccessUnit) {
	t.Helper()
	src := &file.Source{Path: path}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var aus []media.AccessUnit
	for len(aus) < n {
		au, err := src.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := *au
		c.Data = bytes.Clone(au.Data)
		aus = append(aus, c)
	}
	return src.Info(), aus
}

// Selector bits of FuzzDecodeUnits inputs.
const (
	unitsH265    = 1 << iota // H.265 (else H.264)
	unitsPrefix              // decode the clip's first key access unit before the fuzzed ones
	unitsCorrupt             // Decoder.OutputCorrupt
	unitsThreads             // two frame threads
)

// unitsInput encodes access units as FuzzDecodeUnits reads them: a selector byte, then per
// access unit a big-endian uint16 (bit 15: key, bits 0-14: length) and the data.
func unitsInput(sel byte, aus []media.AccessUnit) []byte {
	b := []byte{sel}
	for _, au := range aus {
		h := uint16(min(len(au.Data), 0x7fff))
		if au.Key {
			h |= 0x8000
		}
		b = binary.BigEndian.AppendUint16(b, h)
		b = append(b, au.Data[:h&0x7fff]...)
	}
	return b
}

// FuzzDecodeUnits feeds arbitrary bytes as a stream of H.264 or H.265 access units (seeded with
// the clips' first ones, whole, cut short and after a real key frame): Decode and Flush report
// nothing but ErrCorrupt, every frame has planes that cover the picture, and Close finds no
// frame left unreleased.
func FuzzDecodeUnits(f *testing.F) {
	quietFFmpeg(f)
	prefix := map[media.Codec]media.AccessUnit{}
	for _, clip := range []string{"videos/one-by-one-person-detection.mp4", "videos/person-bicycle-car_hevc.mp4"} {
		info, aus := firstAccessUnits(f, asset(f, clip), 6)
		c := info.Codec
		prefix[c] = aus[0]
		sel := byte(0)
		if c == media.CodecH265 {
			sel = unitsH265
		}
		f.Add(unitsInput(sel, aus))
		f.Add(unitsInput(sel|unitsPrefix|unitsThreads, aus[1:]))
		cut := append([]media.AccessUnit{}, aus[:3]...)
		cut[0].Data = cut[0].Data[:len(cut[0].Data)/2]
		f.Add(unitsInput(sel|unitsCorrupt, cut))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		sel := in[0]
		c := media.CodecH264
		if sel&unitsH265 != 0 {
			c = media.CodecH265
		}
		var stream []media.AccessUnit
		if sel&unitsPrefix != 0 {
			stream = append(stream, prefix[c])
		}
		for rest := in[1:]; len(rest) >= 2; {
			h := binary.BigEndian.Uint16(rest)
			n := min(int(h&0x7fff), len(rest)-2)
			pts := time.Duration(len(stream)) * 40 * time.Millisecond
			stream = append(stream, media.AccessUnit{Codec: c, Data: rest[2 : 2+n], Key: h&0x8000 != 0, PTS: pts, DTS: pts})
			rest = rest[2+n:]
		}
		dec := &codec.Decoder{Codec: c, Frames: 2, OutputCorrupt: sel&unitsCorrupt != 0}
		if sel&unitsThreads != 0 {
			dec.Threads = 2
		}
		if err := dec.Init(); err != nil {
			t.Fatal(err)
		}
		emitted := int64(0)
		emit := func(fr *frame.Frame) error {
			if fr.Width <= 0 || fr.Height <= 0 || len(fr.Planes[0]) < fr.Strides[0]*fr.Height || fr.Strides[0] < fr.Width {
				t.Fatalf("frame %dx%d with a %d-byte luma plane, stride %d", fr.Width, fr.Height, len(fr.Planes[0]), fr.Strides[0])
			}
			emitted++
			fr.Release()
			return nil
		}
		ctx := context.Background()
		for i := range stream {
			if err := dec.Decode(ctx, &stream[i], emit); err != nil && !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("access unit %d: %v", i, err)
			}
		}
		if err := dec.Flush(ctx, emit); err != nil && !errors.Is(err, codec.ErrCorrupt) {
			t.Fatalf("flush: %v", err)
		}
		if st := dec.Stats(); st.Frames != emitted {
			t.Fatalf("%d frames emitted, stats say %d", emitted, st.Frames)
		}
		if err := dec.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
