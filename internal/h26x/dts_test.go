package h26x_test

import (
	"testing"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/internal/sourcetest"
)

// TestDTS derives DTS from the PTS of the clips and compares them with the container's:
// exact for the Baseline H.264 clip (no reordering), and never after PTS nor going back for the
// H.265 clip with B-frames, where it matches once the extractor has seen the reordering depth.
func TestDTS(t *testing.T) {
	for _, tc := range []struct {
		clip  string
		exact int // samples from which DTS must equal the container's
	}{
		{"videos/car-detection.mp4", 0},
		{"videos/person-bicycle-car_hevc.mp4", 3},
	} {
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
