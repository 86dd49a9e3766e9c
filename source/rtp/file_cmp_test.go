package rtp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/file"
)

// TestFileSourceEquivalence ties the byte-exact checks of the live sources (against
// sourcetest.Clip.AnnexB) to what source/file delivers for the same clip: every non-key access
// unit is byte-identical; key frames carry the same NAL units and the same parameter sets, and
// differ only where FFmpeg's mp4toannexb filter writes a 3-byte start code or adds the
// declarative SEI of the MP4 hvcC box, which no RTP sender transmits.
func TestFileSourceEquivalence(t *testing.T) {
	for _, name := range clips {
		t.Run(name, func(t *testing.T) {
			c := sourcetest.LoadClip(t, name)
			f := &file.Source{Path: sourcetest.Asset(t, name)}
			if err := f.Init(); err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			i := 0
			for ; ; i++ {
				au, err := f.Read(context.Background())
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if i >= len(c.Samples) {
					t.Fatalf("the file source delivers more than %d access units", len(c.Samples))
				}
				ref := c.AnnexB(i)
				if bytes.Equal(au.Data, ref) {
					continue
				}
				if !c.Samples[i].Key {
					t.Fatalf("access unit %d (not a key frame) differs", i)
				}
				got, want := split(au.Data), split(ref)
				// drop SEI units the file source inserted in front of the picture
				var kept [][]byte
				for _, n := range got {
					if !isSEI(c.Codec == media.CodecH265, n) || containsNALU(want, n) {
						kept = append(kept, n)
					}
				}
				if len(kept) != len(want) {
					t.Fatalf("key frame %d: %d NAL units, want %d", i, len(kept), len(want))
				}
				for j := range kept {
					if !bytes.Equal(kept[j], want[j]) {
						t.Fatalf("key frame %d: NAL unit %d differs", i, j)
					}
				}
			}
			if i != len(c.Samples) {
				t.Fatalf("%d access units, want %d", i, len(c.Samples))
			}
		})
	}
}

func split(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		var n []byte
		n, b = h26x.NextNALU(b)
		out = append(out, n)
	}
	return out
}

func isSEI(h265 bool, n []byte) bool {
	if h265 {
		t := n[0] >> 1 & 0x3F
		return t == 39 || t == 40
	}
	return n[0]&0x1F == 6
}

func containsNALU(list [][]byte, n []byte) bool {
	for _, m := range list {
		if bytes.Equal(m, n) {
			return true
		}
	}
	return false
}
