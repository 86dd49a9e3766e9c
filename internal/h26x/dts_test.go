package h26x_test

import (
	"testing"

	"github.com/vinfer/vinfer/media"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/internal/sourcetest"
)

// TestDTS derives DTS from the PTS of the clips and compares them with the container's:
// exact for the Baseline H.264 clip (no reordering), and never after PTS nor going back for the
// H.265 clip with B-frames, where it matches once the extractor has seen the reordering depth.
var dtsCases = []struct {
	clip  string
	exact int // samples from which DTS must equal the container's
}{
	{"videos/car-detection.mp4", 0},
	{"videos/person-bicycle-car_hevc.mp4", 3},
}

func TestDTS(t *testing.T) {
	for _, tc := range dtsCases {
		c := sourcetest.LoadClip(t, tc.clip)
		d := h26x.DTS{Codec: c.Codec}
		base := c.Samples[0].DTS
		last := int64(-1 << 62)
		for i, s := range c.Samples {
			var nalus [][]byte
			for b := c.AnnexB(i); len(b) > 0; {
				var n []byte
				n, b = h26x.NextNALU(b)
				nalus = append(nalus, n)
			}
			dts := d.Next(nalus, s.PTS-base)
			if dts > s.PTS-base || dts < last {
				t.Fatalf("%s sample %d: DTS %d, PTS %d, previous DTS %d", tc.clip, i, dts, s.PTS-base, last)
			}
			if i >= tc.exact && dts != s.DTS-base {
				t.Fatalf("%s sample %d: DTS %d, want %d", tc.clip, i, dts, s.DTS-base)
			}
			last = dts
		}
	}
}

func BenchmarkDTSBaseline(b *testing.B) {
	c := sourcetest.LoadClip(b, "videos/car-detection.mp4")
	var aus [][][]byte
	for i := range 60 {
		var nalus [][]byte
		for bb := c.AnnexB(i); len(bb) > 0; {
			var n []byte
			n, bb = h26x.NextNALU(bb)
			nalus = append(nalus, n)
		}
		aus = append(aus, nalus)
	}
	d := h26x.DTS{Codec: c.Codec}
	b.ReportAllocs()
	pts := int64(0)
	for b.Loop() {
		for _, au := range aus {
			pts += 7200
			d.Next(au, pts)
		}
	}
}

// dtsTick is the PTS step unit of FuzzDTS inputs, in 90 kHz ticks.
const dtsTick = 150

// dtsInput encodes the first n samples of the table cases' clips as FuzzDTS reads them: a codec
// byte (1: H.265), then per access unit its NAL units as records of a length byte and the bytes
// (slices cut to their first 48 bytes: the header is what counts), a 0 byte, and the PTS step
// from the previous access unit in units of dtsTick as an int8.
func dtsInput(t testing.TB, c *sourcetest.Clip, n int) []byte {
	b := []byte{0}
	if c.Codec == media.CodecH265 {
		b[0] = 1
	}
	prev := c.Samples[0].PTS
	for i, s := range c.Samples[:n] {
		for _, nalu := range c.WithParamSets(i) {
			if k := h26x.Classify(c.Codec, nalu); k == h26x.KindKey || k == h26x.KindVCL {
				nalu = nalu[:min(len(nalu), 48)]
			}
			if len(nalu) > 255 {
				t.Fatalf("%s sample %d: NAL unit of %d bytes", c.Path, i, len(nalu))
			}
			b = append(append(b, byte(len(nalu))), nalu...)
		}
		b = append(b, 0, byte(int8((s.PTS-prev)/dtsTick)))
		prev = s.PTS
	}
	return b
}

// FuzzDTS derives DTS for arbitrary NAL units and PTS steps (seeded with the clips' first
// access units): it must not panic, DTS never goes back, and StreamInfo reports no negative
// size for any SPS.
func FuzzDTS(f *testing.F) {
	for _, tc := range dtsCases {
		f.Add(dtsInput(f, sourcetest.LoadClip(f, tc.clip), 12))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		codec := media.CodecH264
		if in[0]&1 != 0 {
			codec = media.CodecH265
		}
		d := h26x.DTS{Codec: codec}
		var nalus [][]byte
		pts, last := int64(1<<20), int64(-1<<62)
		for rest := in[1:]; len(rest) > 0; {
			h := int(rest[0])
			rest = rest[1:]
			if h > 0 {
				n := rest[:min(h, len(rest))]
				rest = rest[len(n):]
				nalus = append(nalus, n)
				if h26x.Classify(codec, n) == h26x.KindSPS {
					if info, err := h26x.StreamInfo(codec, n); err == nil && (info.Width < 0 || info.Height < 0) {
						t.Fatalf("SPS %x: %dx%d", n, info.Width, info.Height)
					}
				}
				continue
			}
			if len(rest) > 0 {
				pts += int64(int8(rest[0])) * dtsTick
				rest = rest[1:]
			}
			dts := d.Next(nalus, pts)
			if dts < last {
				t.Fatalf("DTS %d after %d", dts, last)
			}
			last, nalus = dts, nalus[:0]
		}
	})
}
