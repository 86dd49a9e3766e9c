package sources_test

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/live"
)

// TestLossyRTPInfers: FFmpeg sends the clip as RTP through a relay that drops 10% of the
// packets at random, mirrored to FFmpeg's own receiver (one loss pattern for both). The app
// (default settings: concealed pictures are inferred) must infer at least 80% of the frames
// FFmpeg decodes (each inferred, or counted as dropped when the machine is too busy) and find
// objects on them. Concealment smears a lost slice into the P-frames after it until the next
// key frame (every 60 frames here), so fewer frames show a car than in the clean file (the same
// app, every 4th frame): the rates are logged (docs/live.md has a quiet machine's figures).
func TestLossyRTPInfers(t *testing.T) {
	clipPath := sourcetest.Asset(t, mixedClip)
	sdp := sourcetest.FFmpegSDP(t, clipPath)
	ffPort := sourcetest.UDPPortPair(t)
	ff := sourcetest.FFmpegReceive(t, sourcetest.ReceiverSDP(t, sdp, ffPort), ffPort)
	rtpPort := sourcetest.UDPPortPair(t)
	cfg := &config.Config{
		Models: []config.Model{{Name: "yolox", Path: sourcetest.Asset(t, "models/yolox_nano_416.onnx")}},
		Streams: []config.Stream{
			{ID: "file", Source: clipPath, Model: "yolox", Interval: 4, Realtime: true, Drop: config.DropBlock}, // paced: leaves the cores to the live stream
			// Live defaults (drop oldest): on a starved machine inference skips frames (counted)
			// instead of the source's queue overflowing.
			{ID: "rtp", Source: fmt.Sprintf("rtp://127.0.0.1:%d?codec=h264", rtpPort), Model: "yolox"},
		},
	}
	logs := &logBuffer{}
	rec := &resultLog{}
	a := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{rec},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	t.Cleanup(func() { a.Stop() })
	for _, s := range cfg.Streams {
		if err := a.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}
	relay := sourcetest.NewRelay(t, 0, fmt.Sprintf("127.0.0.1:%d", rtpPort), 0.10, 2026)
	relay.Mirror(t, fmt.Sprintf("127.0.0.1:%d", ffPort))
	// Real time (30 s): inference must keep up with the stream on a loaded machine, or the
	// source's queue overflows (counted drops), which is not what this test is about.
	snd := sourcetest.Start(t, sourcetest.Tool(t, "ffmpeg"), "-v", "error", "-re", "-i", clipPath,
		"-map", "0:v:0", "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "rtp",
		fmt.Sprintf("rtp://127.0.0.1:%d?pkt_size=1400", relay.Port()))
	if out, err := snd.Wait(5 * time.Minute); err != nil {
		t.Fatalf("sender: %v %s", err, out)
	}
	ffFrames := ff.Stop(3 * time.Second)
	stats := func(id string) *pipeline.StreamStats {
		s, ok := a.Pipeline.Stream(id)
		if !ok {
			t.Fatalf("stream %s gone", id)
		}
		return s.Stats
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range a.Pipeline.Streams() {
				var src any
				if ls, ok := s.Source.(interface{ Stats() live.Stats }); ok {
					src = ls.Stats()
				}
				t.Logf("%s: decoded %d inferred %d dropped %d; source %+v", s.ID, s.Stats.Decoded.Load(), s.Stats.Inferred.Load(),
					s.Stats.DroppedTotal(), src)
			}
		}
	})
	testutil.Eventually(t, 3*time.Minute, "the RTP stream decoding 80% of FFmpeg's frames, each inferred or counted", func() bool {
		st := stats("rtp")
		return st.Decoded.Load()*10 >= int64(ffFrames)*8 && st.Inferred.Load()+st.DroppedTotal() == st.Decoded.Load()
	})
	testutil.Eventually(t, 3*time.Minute, "the file stream's end", func() bool { return len(rec.get("file")) == 95 })
	rate := func(id string) (float64, int) {
		rs := rec.get(id)
		with := 0
		for _, r := range rs {
			if len(r.dets) > 0 {
				with++
			}
		}
		return float64(with) / float64(len(rs)), len(rs)
	}
	fileRate, _ := rate("file")
	rtpRate, n := rate("rtp")
	st := stats("rtp")
	t.Logf("10%% loss: relay dropped %d packets; FFmpeg decoded %d frames, the pipeline decoded %d (%.0f%%) and inferred %d (%d dropped on a busy machine); frames with detections: %.0f%% (clean file %.0f%%)",
		relay.Dropped.Load(), ffFrames, st.Decoded.Load(), 100*float64(st.Decoded.Load())/float64(ffFrames), n, st.DroppedTotal(), 100*rtpRate, 100*fileRate)
	if with := int(rtpRate*float64(n) + 0.5); with < 10 {
		t.Errorf("objects found on %d of the lossy stream's %d inferred frames", with, n)
	}
}
