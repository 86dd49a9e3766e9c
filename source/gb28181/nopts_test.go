package gb28181

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

// TestNoPESPTSOutputOrder: a camera whose program stream carries no PES PTS stamps its frames
// only by RTP timestamps, which follow decoding order: with B-frames the decoded pictures' PTS
// went back (59 of 120 frames of the HEVC clip). The Source now reports its stamps in decoding
// order (media.StreamInfo.PTSInDecodeOrder) by its first access unit, when the pipeline makes
// the decoder, which re-stamps the pictures in presentation order: PTS never go back.
func TestNoPESPTSOutputOrder(t *testing.T) {
	for _, name := range clips {
		t.Run(name[len("videos/"):], func(t *testing.T) {
			c := sourcetest.LoadClip(t, name)
			const n = 120
			port := sourcetest.UDPPortPair(t)
			src := open(t, &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), RTCPAddr: "none"})
			snd := newSender(c, 0x20000003, ps.Quirks{NoPTS: true})
			snd.run(0, n, udpWriter(t, fmt.Sprintf("127.0.0.1:%d", port)))
			pts := decodeAsPipeline(t, src, n)
			if len(pts) != n {
				t.Errorf("%d frames of %d access units", len(pts), n)
			}
			sourcetest.CheckPTSOrder(t, pts)
		})
	}
}

// decodeAsPipeline decodes n access units of src as the pipeline does (app.addStream): the
// decoder is made at the first access unit, re-stamping when the source's Info says so.
func decodeAsPipeline(t *testing.T, src *Source, n int) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var dec *codec.Decoder
	var pts []time.Duration
	emit := func(f *frame.Frame) error { pts = append(pts, f.PTS); f.Release(); return nil }
	for i := range n {
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read %d: %v (stats %+v)", i, err, src.Stats())
		}
		if dec == nil {
			dec = &codec.Decoder{Codec: au.Codec, ReorderPTS: src.Info().PTSInDecodeOrder}
			if err := dec.Init(); err != nil {
				t.Fatal(err)
			}
			defer dec.Close()
		}
		if err := dec.Decode(ctx, au, emit); err != nil && !errors.Is(err, codec.ErrCorrupt) {
			t.Fatal(err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		t.Fatal(err)
	}
	return pts
}
