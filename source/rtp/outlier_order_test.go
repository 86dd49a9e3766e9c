package rtp

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestTimestampOutlierOutputOrder sends clips with B-frames in which one access unit's RTP
// timestamp is three hours off, at several places in the GOP structure, and decodes what the
// Source delivers as the pipeline does: the decoded frames' PTS never go backwards, and no
// frame is lost but the outlier's own.
func TestTimestampOutlierOutputOrder(t *testing.T) {
	eachShift(t, false, func(t *testing.T, c *sourcetest.Clip, src *Source, n, bad int) {
		pts := sourcetest.DecodePTS(t, src, c.Codec, n-1) // the last access unit ends with its marker: all n arrive
		sourcetest.CheckPTSOrder(t, pts)
		if len(pts) < n-2 {
			t.Errorf("%d frames of %d access units: want all but the outlier's", len(pts), n-1)
		}
		if st := src.Stats(); st.TimestampOutliers != 1 {
			t.Errorf("%d outliers counted, want 1", st.TimestampOutliers)
		}
	})
}

// TestTimestampJumpOutputOrder sends clips with B-frames whose RTP timestamps jump by three
// hours for good at several places in the GOP structure (a DVR jumping): the decoded frames'
// PTS never go backwards, one jump is counted, and no frame is lost after the next key frame.
func TestTimestampJumpOutputOrder(t *testing.T) {
	eachShift(t, true, func(t *testing.T, c *sourcetest.Clip, src *Source, n, bad int) {
		key := c.NextKey(bad, n)
		pts := sourcetest.DecodePTS(t, src, c.Codec, n-1) // the last access unit ends with its marker: all n arrive
		sourcetest.CheckPTSOrder(t, pts)
		if lost := n - 1 - len(pts); lost > key-bad {
			t.Errorf("%d frames of %d access units: %d lost, want at most the %d up to the next key frame", len(pts), n-1, lost, key-bad)
		}
		if st := src.Stats(); st.TimestampJumps != 1 {
			t.Errorf("%d jumps counted, want 1", st.TimestampJumps)
		}
	})
}

// eachShift runs check as a subtest for each clip and each access unit bad (49 to 52: several
// places in the GOP structure), after sending the clip's first n access units over RTP/UDP
// with bad's RTP timestamp three hours off, and every later one's too when jump is set.
func eachShift(t *testing.T, jump bool, check func(t *testing.T, c *sourcetest.Clip, src *Source, n, bad int)) {
	for _, name := range clips {
		c := sourcetest.LoadClip(t, name)
		for _, bad := range []int{49, 50, 51, 52} {
			t.Run(name[len("videos/"):]+"/"+string(rune('0'+bad/10))+string(rune('0'+bad%10)), func(t *testing.T) {
				var logs testutil.LogBuffer
				src := openLogged(t, &Source{Codec: c.Codec, QueueSize: 1024}, &logs)
				const n = 120
				pkts := c.Packetize(t, 0, n, 96, 0x77, 0, 1000, true)
				first := firstPackets(pkts)
				end := first[bad+1]
				if jump {
					end = len(pkts)
				}
				for i := first[bad]; i < end; i++ {
					pkts[i].Timestamp += 3 * 3600 * 90000
				}
				sourcetest.NewUDPSender(t, src.Addr().String()).Send(t, pkts, 2*time.Millisecond)
				check(t, c, src, n, bad)
			})
		}
	}
}
