package rtp

import (
	"context"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestTimestampOutlier sends a clip with B-frames in which one access unit's RTP timestamp is
// three hours off: that one is an outlier, and every other access unit keeps the PTS the clip
// gives it (nothing shifted), with one outlier counted and no jump.
func TestTimestampOutlier(t *testing.T) {
	c := sourcetest.LoadClip(t, clips[1]) // H.265 with B-frames
	var logs testutil.LogBuffer
	src := openLogged(t, &Source{Codec: c.Codec, QueueSize: 1024}, &logs)
	snd := sourcetest.NewUDPSender(t, src.Addr().String())
	const n, bad = 120, 50
	pkts := c.Packetize(t, 0, n, 96, 0x77, 0, 1000, true)
	first := firstPackets(pkts)
	for i := first[bad]; i < first[bad+1]; i++ {
		pkts[i].Timestamp += 3 * 3600 * 90000
	}
	snd.Send(t, pkts, 2*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	base := time.Duration(-1)
	for i := range n - 1 { // the last access unit ends with its marker: all n arrive
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatalf("read %d: %v (stats %+v)", i, err, src.Stats())
		}
		want := time.Duration(c.Samples[i].PTS) * time.Second / 90000
		if base < 0 {
			base = au.PTS - want
		}
		if i != bad && au.PTS-base != want {
			t.Fatalf("access unit %d: PTS %v, want %v", i, au.PTS-base, want)
		}
	}
	st := src.Stats()
	if st.TimestampOutliers != 1 || st.TimestampJumps != 0 {
		t.Fatalf("stats %+v", st)
	}
}
