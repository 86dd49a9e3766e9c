package rtp

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
)

// TestTimestampOutlierOutputOrder sends clips with B-frames in which one access unit's RTP
// timestamp is three hours off, at several places in the GOP structure, and decodes what the
// Source delivers as the pipeline does: the decoded frames' PTS never go backwards, and no
// frame is lost but the outlier's own.
func TestTimestampOutlierOutputOrder(t *testing.T) {
	for _, name := range clips {
		c := sourcetest.LoadClip(t, name)
		for _, bad := range []int{49, 50, 51, 52} {
			t.Run(name[len("videos/"):]+"/"+string(rune('0'+bad/10))+string(rune('0'+bad%10)), func(t *testing.T) {
				var logs testutil.LogBuffer
				src := openLogged(t, &Source{Codec: c.Codec, QueueSize: 1024}, &logs)
				const n = 120
				pkts := c.Packetize(t, 0, n, 96, 0x77, 0, 1000, true)
				first := firstPackets(pkts)
				for i := first[bad]; i < first[bad+1]; i++ {
					pkts[i].Timestamp += 3 * 3600 * 90000
				}
				sourcetest.NewUDPSender(t, src.Addr().String()).Send(t, pkts, 2*time.Millisecond)
				dec := &codec.Decoder{Codec: c.Codec}
				if err := dec.Init(); err != nil {
					t.Fatal(err)
				}
				defer dec.Close()
				var pts []time.Duration
				emit := func(f *frame.Frame) error { pts = append(pts, f.PTS); f.Release(); return nil }
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				defer cancel()
				for i := range n - 1 { // the last access unit ends with its marker: all n arrive
					au, err := src.Read(ctx)
					if err != nil {
						t.Fatalf("read %d: %v (stats %+v)", i, err, src.Stats())
					}
					if err := dec.Decode(ctx, au, emit); err != nil && !errors.Is(err, codec.ErrCorrupt) {
						t.Fatal(err)
					}
				}
				if err := dec.Flush(ctx, emit); err != nil {
					t.Fatal(err)
				}
				for i := 1; i < len(pts); i++ {
					if pts[i] < pts[i-1] {
						t.Errorf("frame %d: PTS %v after %v", i, pts[i], pts[i-1])
					}
				}
				if len(pts) < n-2 {
					t.Errorf("%d frames of %d access units: want all but the outlier's", len(pts), n-1)
				}
				if st := src.Stats(); st.TimestampOutliers != 1 {
					t.Errorf("%d outliers counted, want 1", st.TimestampOutliers)
				}
			})
		}
	}
}

// TestTimestampJumpOutputOrder sends clips with B-frames whose RTP timestamps jump by three
// hours for good at several places in the GOP structure (a DVR jumping): the decoded frames'
// PTS never go backwards, one jump is counted, and no frame is lost after the next key frame.
func TestTimestampJumpOutputOrder(t *testing.T) {
	for _, name := range clips {
		c := sourcetest.LoadClip(t, name)
		for _, bad := range []int{49, 50, 51, 52} {
			t.Run(name[len("videos/"):]+"/"+string(rune('0'+bad/10))+string(rune('0'+bad%10)), func(t *testing.T) {
				var logs testutil.LogBuffer
				src := openLogged(t, &Source{Codec: c.Codec, QueueSize: 1024}, &logs)
				const n = 120
				pkts := c.Packetize(t, 0, n, 96, 0x77, 0, 1000, true)
				first := firstPackets(pkts)
				for i := first[bad]; i < len(pkts); i++ {
					pkts[i].Timestamp += 3 * 3600 * 90000
				}
				key := bad
				for key < n && !c.Samples[key].Key {
					key++
				}
				sourcetest.NewUDPSender(t, src.Addr().String()).Send(t, pkts, 2*time.Millisecond)
				pts := decodeAll(t, src, c.Codec, n-1) // the last access unit ends with its marker: all n arrive
				for i := 1; i < len(pts); i++ {
					if pts[i] < pts[i-1] {
						t.Errorf("frame %d: PTS %v after %v", i, pts[i], pts[i-1])
					}
				}
				if lost := n - 1 - len(pts); lost > key-bad {
					t.Errorf("%d frames of %d access units: %d lost, want at most the %d up to the next key frame", len(pts), n-1, lost, key-bad)
				}
				if st := src.Stats(); st.TimestampJumps != 1 {
					t.Errorf("%d jumps counted, want 1", st.TimestampJumps)
				}
			})
		}
	}
}

// decodeAll reads n access units from src and decodes them as the pipeline does; it returns
// the decoded frames' PTS in output order.
func decodeAll(t *testing.T, src *Source, cd media.Codec, n int) []time.Duration {
	t.Helper()
	dec := &codec.Decoder{Codec: cd}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var pts []time.Duration
	emit := func(f *frame.Frame) error { pts = append(pts, f.PTS); f.Release(); return nil }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read %d: %v (stats %+v)", i, err, src.Stats())
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
