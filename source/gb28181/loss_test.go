package gb28181

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/asticode/go-astiav"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/gb28181/ps"
)

// TestLossVsFFmpeg sends a clip as GB28181 media (PS over RTP/UDP, the in-test sender at 3×
// real time) through a relay that drops packets at random, 2% and 10%, once to FFmpeg
// (sourcetest.FFmpegReceivePS: the RTP payloads piped into ffmpeg's program stream demuxer)
// and once to a Source, with the same loss pattern (same seed, same packets): the Source must
// decode at least 80% of the frames FFmpeg decodes, and keep running. The figures go to
// docs/live.md.
func TestLossVsFFmpeg(t *testing.T) {
	astiav.SetLogLevel(astiav.LogLevelQuiet) // concealment reports
	defer astiav.SetLogLevel(astiav.LogLevelError)
	c := sourcetest.LoadClip(t, clips[0])
	const ssrc, rate, seed = 100000001, 3, 2026
	for _, loss := range []float64{0.02, 0.10} {
		t.Run(fmt.Sprintf("%.0f%%", loss*100), func(t *testing.T) {
			// FFmpeg
			port := sourcetest.UDPPortPair(t)
			ff := sourcetest.FFmpegReceivePS(t, port)
			relay := sourcetest.NewRelay(t, 0, fmt.Sprintf("127.0.0.1:%d", port), loss, seed)
			snd := newSender(c, ssrc, ps.Quirks{})
			snd.rate = rate
			snd.run(0, len(c.Samples), udpWriter(t, fmt.Sprintf("127.0.0.1:%d", relay.Port())))()
			ffFrames := ff.Stop(t, relay.Passed.Load())
			ffDropped := relay.Dropped.Load()

			// vinfer
			port = sourcetest.UDPPortPair(t)
			src := open(t, &Source{ListenAddr: fmt.Sprintf("127.0.0.1:%d", port), RTCPAddr: "none", SSRC: ssrc, QueueSize: 1024})
			relay = sourcetest.NewRelay(t, 0, fmt.Sprintf("127.0.0.1:%d", port), loss, seed)
			snd = newSender(c, ssrc, ps.Quirks{})
			snd.rate = rate
			sent := make(chan struct{})
			wait := snd.run(0, len(c.Samples), udpWriter(t, fmt.Sprintf("127.0.0.1:%d", relay.Port())))
			go func() { wait(); close(sent) }()
			fc := sourcetest.NewFrameCounter(t, media.CodecH264)
			aus := 0
			for {
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				au, err := src.Read(ctx)
				cancel()
				if err == nil {
					aus++
					fc.Decode(t, au)
					continue
				}
				select {
				case <-sent: // the sender is done: stop once every packet passed was taken in
					if src.Stats().Packets >= uint64(relay.Passed.Load()) {
						break
					}
					continue
				default:
					continue // a loaded machine: the sender is still going
				}
				break
			}
			fc.Decode(t, nil)
			st := src.Stats()
			t.Logf("loss %.0f%%: ffmpeg decoded %d frames (relay dropped %d packets); vinfer: %d access units, %d frames decoded (%d without concealment), relay dropped %d; stats %+v; demux %+v",
				loss*100, ffFrames, ffDropped, aus, fc.All, fc.Clean, relay.Dropped.Load(), st, src.DemuxStats())
			t.Logf("reference: %s", strings.Join(ff.Args, " "))
			if ffDropped != relay.Dropped.Load() {
				t.Fatalf("the relays dropped %d and %d packets: not the same loss", ffDropped, relay.Dropped.Load())
			}
			if fc.All*10 < ffFrames*8 {
				t.Fatalf("decoded %d frames, FFmpeg %d: less than 80%%", fc.All, ffFrames)
			}
			// packets dropped after the last one passed leave no gap to count
			if st.Watchdog != 0 || st.Damaged == 0 || st.Lost == 0 || st.Lost > uint64(relay.Dropped.Load()) || st.Overflow != 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
