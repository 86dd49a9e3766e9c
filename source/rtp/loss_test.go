package rtp

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asticode/go-astiav"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
)

// TestSourceLossVsFFmpeg sends a clip with FFmpeg through a relay that drops packets at
// random, 2% and 10%, to FFmpeg's own RTP receiver and to a Source at once (the relay mirrors
// the same packets, so both see one loss pattern): the Source must decode at least 80% of the
// frames FFmpeg decodes, and must not stall or reset while packets arrive. The figures go to
// docs/live.md.
func TestSourceLossVsFFmpeg(t *testing.T) {
	astiav.SetLogLevel(astiav.LogLevelQuiet) // concealment reports
	t.Cleanup(func() { astiav.SetLogLevel(astiav.LogLevelError) })
	name := clips[0]
	path := sourcetest.Asset(t, name)
	sdp := sourcetest.FFmpegSDP(t, path)
	const readrate = 3
	for _, loss := range []float64{0.02, 0.10} {
		t.Run(fmt.Sprintf("%.0f%%", loss*100), func(t *testing.T) {
			t.Parallel()
			ffPort := sourcetest.UDPPortPair(t)
			ff := sourcetest.FFmpegReceive(t, sourcetest.ReceiverSDP(t, sdp, ffPort), ffPort)
			port := sourcetest.UDPPortPair(t)
			src := &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), SDPFile: sdp, RTCPAddr: "none", QueueSize: testQueue}
			if err := src.Init(); err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			relay := sourcetest.NewRelay(t, 0, fmt.Sprintf("127.0.0.1:%d", port), loss, 2026)
			relay.Mirror(t, fmt.Sprintf("127.0.0.1:%d", ffPort))
			snd := sourcetest.FFmpegRTP(t, path, relay.Port(), readrate)
			sent := make(chan struct{})
			go func() { snd.Wait(5 * time.Minute); close(sent) }() //nolint:errcheck
			// Read as a pipeline does (promptly); decode afterwards, so a slow machine's decoding
			// does not overflow the source's queue.
			var aus []media.AccessUnit
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				au, err := src.Read(ctx)
				cancel()
				if err != nil {
					select {
					case <-sent:
					default:
						continue // a loaded machine: the sender is still going
					}
					break
				}
				c := *au
				c.Data = append([]byte(nil), au.Data...)
				aus = append(aus, c)
			}
			st := src.Stats()
			ffFrames := ff.Stop(3 * time.Second)
			fc := sourcetest.NewFrameCounter(t, media.CodecH264)
			for i := range aus {
				fc.Decode(t, &aus[i])
			}
			fc.Decode(t, nil)
			t.Logf("loss %.0f%%: relay dropped %d packets; ffmpeg decoded %d frames; vinfer: %d access units, %d frames decoded (%d without concealment); stats %+v",
				loss*100, relay.Dropped.Load(), ffFrames, len(aus), fc.All, fc.Clean, st)
			t.Logf("reference: %s", strings.Join(ff.Args, " "))
			if fc.All*10 < ffFrames*8 {
				t.Fatalf("decoded %d frames, FFmpeg %d: less than 80%%", fc.All, ffFrames)
			}
			if st.Watchdog != 0 || st.Damaged == 0 || st.Lost == 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
