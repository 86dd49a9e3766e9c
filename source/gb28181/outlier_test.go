package gb28181

import (
	"fmt"
	"testing"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

// TestTimestampOutlierOutputOrder sends clips with B-frames as GB28181 media (PS over RTP/UDP)
// in which one frame's timestamps are three hours off, at several places in the GOP structure,
// and decodes what the Source delivers as the pipeline does. When the program stream's clock
// (SCR, PTS, DTS) jumps, alone or with the RTP timestamp, that frame is an outlier: counted,
// decoded for reference, not shown. When only the RTP timestamp jumps, the PES PTS still
// stamps the frame and nothing is lost. When both jump for good, the two frames before the
// jump is sure are outliers and, with B-frames, the frames up to the next key frame are not
// shown. In every case the decoded frames' PTS never go backwards.
func TestTimestampOutlierOutputOrder(t *testing.T) {
	const hours3 = 3 * 3600 * 90000
	for _, name := range clips {
		c := sourcetest.LoadClip(t, name)
		for _, k := range []struct {
			name     string
			ps, rtp  int64
			outliers uint64
			jump     bool // every frame from bad on is off: a jump (the two before it outliers)
		}{{"ps", hours3, 0, 1, false}, {"ps+rtp", hours3, hours3, 1, false}, {"rtp", 0, hours3, 0, false}, {"jump", hours3, hours3, 2, true}} {
			for _, bad := range []int{49, 50, 51, 52} {
				t.Run(fmt.Sprintf("%s/%s/%d", name[len("videos/"):], k.name, bad), func(t *testing.T) {
					const n = 120
					port := sourcetest.UDPPortPair(t)
					src := open(t, &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), RTCPAddr: "none"})
					snd := newSender(c, 0x20000001, ps.Quirks{})
					snd.skew = func(i int) (int64, int64) {
						if i == bad || (k.jump && i > bad) {
							return k.ps, k.rtp
						}
						return 0, 0
					}
					snd.run(0, n, udpWriter(t, fmt.Sprintf("127.0.0.1:%d", port)))
					pts := sourcetest.DecodePTS(t, src, c.Codec, n) // each frame ends with its marker: all n arrive
					sourcetest.CheckPTSOrder(t, pts)
					want, jumps := n-int(k.outliers), uint64(0)
					if k.jump {
						key := c.NextKey(bad, n) // with B-frames, frames after a jump are not shown up to the next key frame
						want, jumps = n-(key-bad), 1
					}
					if len(pts) < want || (!k.jump && len(pts) != want) {
						t.Errorf("%d frames of %d access units, want %d", len(pts), n, want)
					}
					if st := src.Stats(); st.TimestampOutliers != k.outliers || st.TimestampJumps != jumps {
						t.Errorf("%d outliers and %d jumps counted, want %d and %d", st.TimestampOutliers, st.TimestampJumps, k.outliers, jumps)
					}
				})
			}
		}
	}
}
