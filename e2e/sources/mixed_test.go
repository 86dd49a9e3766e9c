package sources_test

import (
	"fmt"
	"github.com/vinfer/vinfer/internal/apptest"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/rtsp"
)

// The clip every stream of TestMixedSources carries: H.264 Baseline, 768×432, 12.5 fps, 377
// frames, a key frame every 60, no B-frames (PTS = DTS). The live senders start at key frame
// liveStart (4.8 s), where cars come into view; the file stream plays it from the start.
const (
	mixedClip = "videos/car-detection.mp4"
	liveStart = 60
)

// scoreThreshold is the model's score threshold in TestMixedSources, low so that weak boxes
// are compared too; detections within scoreSlack of it may appear on one side only.
const (
	scoreThreshold = 0.1
	scoreSlack     = 0.02
	minIoU         = 0.9
)

// TestMixedSources runs one app (what `vinfer run` builds from a config) with the four kinds
// of sources at once, each carrying car-detection.mp4, against real peers on loopback:
//
//	file     the MP4 itself (read as fast as inference takes it, nothing dropped)
//	rtsp     a gortsplib server in the test, RTP/AVP over TCP, paced in real time
//	rtp      Debian's ffmpeg -re sending RTP (RFC 6184) to a UDP port
//	gb28181  a GB28181 sender in the test: MPEG-PS (ISO/IEC 13818-1) in RTP over UDP, one SSRC
//
// It checks that every stream infers, the live ones report Live, live detections equal the
// file's for the same frames, the other streams keep inferring while the RTSP server is down,
// the RTSP stream reconnects once the server is back, and no frame leaks.
//
// Frames are aligned by PTS: every sender starts at the clip's key frame liveStart once the
// app listens, and live sources start their PTS at 0 on the first access unit, so a live result
// with PTS p shows the frame the file stream shows at PTS p + PTS(liveStart), and its frame
// number is liveStart less. This holds for the RTSP stream's first session only: a
// reconnection continues the stream's timeline from where it stopped (timestamp repair), not
// from the clip's timeline, so the second session is checked for progress, not detections.
func TestMixedSources(t *testing.T) {
	ffmpeg := sourcetest.Tool(t, "ffmpeg")
	clip := sourcetest.LoadClip(t, mixedClip)
	clipPath := sourcetest.Asset(t, mixedClip)
	model := sourcetest.Asset(t, "models/yolox_nano_416.onnx")

	frame.SetDebug(true)
	t.Cleanup(func() { frame.SetDebug(false) })

	// Peers that listen come first; senders start once the app's sockets are open.
	srv := newRTSPServer(t, clip, liveStart)
	srv.start()
	rtpPort := sourcetest.UDPPortPair(t)
	gbPort := sourcetest.UDPPortPair(t)
	const gbSSRC = 100000001

	th := float32(scoreThreshold)
	cfg := &config.Config{
		Models: []config.Model{{Name: "yolox", Path: model, ScoreThreshold: &th}},
		Streams: []config.Stream{
			{ID: "file", Source: clipPath, Model: "yolox"},
			{ID: "rtsp", Source: srv.url(), Model: "yolox", Transport: config.TransportTCP},
			{ID: "rtp", Source: fmt.Sprintf("rtp://127.0.0.1:%d?codec=h264", rtpPort), Model: "yolox"},
			{ID: "gb28181", Source: fmt.Sprintf("gb28181://127.0.0.1:%d?transport=udp&ssrc=%d", gbPort, gbSSRC), Model: "yolox"},
		},
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	logs := &logBuffer{}
	rec := &resultLog{}
	a := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{rec},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			if err := a.Stop(); err != nil {
				t.Errorf("app stop: %v", err)
			}
		}
	}
	t.Cleanup(stop)
	for _, s := range cfg.Streams {
		if err := a.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}

	// ffmpeg: the MP4's avcC parameter sets go in-band before each key frame
	// (h264_mp4toannexb), so codec=h264 is all the receiver needs (no SDP file).
	// -ss on the input seeks to the key frame at liveStart's PTS exactly.
	offset := time.Duration(clip.Samples[liveStart].PTS) * time.Second / 90000
	sourcetest.Start(t, ffmpeg, "-v", "error", "-re", "-ss", fmt.Sprint(offset.Seconds()), "-i", clipPath, "-map", "0:v:0", "-c", "copy",
		"-bsf:v", "h264_mp4toannexb", "-f", "rtp", fmt.Sprintf("rtp://127.0.0.1:%d?pkt_size=1400", rtpPort))
	startGBSender(t, clip, liveStart, gbSSRC, fmt.Sprintf("127.0.0.1:%d", gbPort))

	status := func(id string) pipeline.StreamStatus {
		st, ok := a.Pipeline.Stream(id)
		if !ok {
			t.Fatalf("stream %s is gone", id)
		}
		return st
	}
	inferred := func(id string) int64 { return status(id).Stats.Inferred.Load() }
	rtspStats := func() live.Stats { return status("rtsp").Source.(*rtsp.Source).Stats() }
	describe := func() string {
		var b strings.Builder
		for _, s := range a.Pipeline.Streams() {
			fmt.Fprintf(&b, "\n  %s: live %v ended %v err %v decoded %d inferred %d dropped %d",
				s.ID, s.Live, s.Ended, s.Err, s.Stats.Decoded.Load(), s.Stats.Inferred.Load(), s.Stats.DroppedTotal())
			if ls, ok := s.Source.(interface{ Stats() live.Stats }); ok {
				st := ls.Stats()
				fmt.Fprintf(&b, " | source: AUs %d lost %d dropped %d overflow %d connects %d reconnects %d failures %d",
					st.AccessUnits, st.Lost, st.Dropped, st.Overflow, st.Connects, st.Reconnects, st.ConnectFailures)
			}
		}
		return b.String()
	}
	// waitFor polls cond; the timeouts are generous (a loaded 2-core machine), the polling is
	// what makes the test fast where the machine is not.
	waitFor := func(what string, timeout time.Duration, cond func() bool) {
		t.Helper()
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("streams:%s\nlogs:\n%s", describe(), logs.String())
			}
		})
		testutil.Eventually(t, timeout, what, cond)
	}
	const minResults = 25 // 2 s of a live stream: the first key frame and a stretch after it
	waitFor("every stream infers", 90*time.Second, func() bool {
		for _, s := range cfg.Streams {
			if inferred(s.ID) < minResults {
				return false
			}
		}
		return true
	})
	for _, s := range a.Pipeline.Streams() {
		if want := s.ID != "file"; s.Live != want {
			t.Errorf("%s: Live %v, want %v", s.ID, s.Live, want)
		}
	}

	// The RTSP server goes away: the stream waits and retries, the others go on (the file
	// stream may have ended on a fast machine, and on a very slow one the live senders may have
	// sent their last frame by now).
	cut := srv.close()
	sentAll := uint64(len(clip.Samples) - liveStart)
	goesOn := func(id string, before int64) bool {
		if id == "file" {
			return inferred(id) >= before+10 || status(id).Ended
		}
		st := status(id)
		return inferred(id) >= before+10 ||
			st.Source.(interface{ Stats() live.Stats }).Stats().AccessUnits >= sentAll && st.Stats.Decoded.Load() == st.Stats.Inferred.Load()+st.Stats.DroppedTotal()
	}
	before := map[string]int64{"file": inferred("file"), "rtp": inferred("rtp"), "gb28181": inferred("gb28181")}
	waitFor("the other streams infer while the RTSP server is down", 60*time.Second, func() bool {
		return goesOn("file", before["file"]) && goesOn("rtp", before["rtp"]) && goesOn("gb28181", before["gb28181"])
	})
	if st := status("rtsp"); st.Ended || st.Err != nil {
		t.Fatalf("rtsp stream ended (%v) while its server was down; it must wait and retry", st.Err)
	}
	downStats := rtspStats()

	// The server comes back at the same address: the stream resumes.
	rtspBefore := inferred("rtsp")
	srv.start()
	waitFor("rtsp resumes after the server is back", 60*time.Second, func() bool {
		return rtspStats().Reconnects >= 1 && inferred("rtsp") >= rtspBefore+10
	})
	rs := rtspStats()

	// The live results so far are compared; the file stream, which nothing drops, must get to
	// the last frame among them.
	liveIDs := []string{"rtsp", "rtp", "gb28181"}
	got := map[string][]result{}
	var last time.Duration // on the clip's timeline
	for _, id := range liveIDs {
		got[id] = rec.get(id)
		for _, r := range got[id] {
			if id != "rtsp" || r.pts+offset <= cut {
				last = max(last, r.pts+offset)
			}
		}
	}
	need := int64(0) // file frames up to last (in presentation order: no B-frames)
	for _, smp := range clip.Samples {
		if time.Duration(smp.PTS)*time.Second/90000 <= last {
			need++
		}
	}
	final := a.Pipeline.Streams()
	t.Logf("streams:%s", describe())
	// The live streams go (as through the API), leaving the cores to the file stream.
	for _, id := range liveIDs {
		if err := a.RemoveStream(id); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("the file stream gets to the live streams' frames", 120*time.Second, func() bool {
		return inferred("file") >= need
	})
	final[0] = status("file") // it went on
	stop()

	if l := logs.String(); strings.Contains(l, "never released") || strings.Contains(l, "double Release") {
		t.Fatalf("frame accounting:\n%s", l)
	}
	for _, s := range final {
		if s.Err != nil {
			t.Errorf("%s: %v", s.ID, s.Err)
		}
		if d, n := s.Stats.Decoded.Load(), s.Stats.Inferred.Load(); d < n+s.Stats.DroppedTotal() {
			t.Errorf("%s: decoded %d < inferred %d + dropped %d", s.ID, d, n, s.Stats.DroppedTotal())
		}
	}
	if rs.Connects < 2 || rs.Reconnects < 1 || rs.Discontinuities < 1 {
		t.Errorf("rtsp: a reconnection must be counted: %+v", rs)
	}
	t.Logf("rtsp while its server was down: %d failed connection attempts (backoff %v)", downStats.ConnectFailures, live.DefaultBackoff)

	// Detections: every live result of a comparable frame must equal the file's.
	file := rec.byPTS("file")
	for _, id := range liveIDs {
		res := got[id]
		// Without loss every access unit from liveStart on was decoded: frame numbers line up too.
		var st live.Stats
		for _, s := range final {
			if s.ID == id {
				st = s.Source.(interface{ Stats() live.Stats }).Stats()
			}
		}
		complete := st.Lost == 0 && st.Dropped == 0 && st.Overflow == 0
		// PTS never go back, also across the RTSP reconnection.
		for i := 1; i < len(res); i++ {
			if res[i].pts <= res[i-1].pts {
				t.Errorf("%s: result %d PTS %v after %v", id, i, res[i].pts, res[i-1].pts)
			}
		}
		compared, dets, bad := 0, 0, 0
		for _, r := range res {
			if id == "rtsp" && r.pts+offset > cut {
				break // second session: its PTS continue the timeline, not the clip's
			}
			f, ok := file[r.pts+offset]
			if !ok {
				t.Errorf("%s: frame %d (PTS %v): no file result at PTS %v", id, r.frame, r.pts, r.pts+offset)
				continue
			}
			if complete && f.frame != r.frame+liveStart {
				t.Errorf("%s: PTS %v is frame %d, the file's frame %d", id, r.pts, r.frame, f.frame)
			}
			if err := sameDetections(f.dets, r.dets); err != nil {
				if bad++; bad <= 5 {
					t.Errorf("%s: frame %d (PTS %v): %v\n  file: %v\n  %s: %v", id, r.frame, r.pts, err, f.dets, id, r.dets)
				}
			}
			compared++
			dets += len(r.dets)
		}
		if compared < minResults || dets < 10 {
			t.Errorf("%s: only %d results (%d detections) compared with the file's", id, compared, dets)
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d frames differ from the file's", id, bad, compared)
		}
		t.Logf("%s: %d results, %d compared with the file's (%d detections): %d differ", id, len(res), compared, dets, bad)
	}
}

// sameDetections reports how want and got differ beyond the tolerances: each detection must
// have one of the same class with a score within scoreSlack and an IoU of at least minIoU,
// except borderline ones (score below scoreThreshold+scoreSlack), which may be missing.
func sameDetections(want, got []detect.Detection) error {
	used := make([]bool, len(got))
	for _, w := range want {
		best, bestIoU := -1, float32(0)
		for j, g := range got {
			if used[j] || g.ClassID != w.ClassID || math.Abs(float64(g.Score-w.Score)) > scoreSlack {
				continue
			}
			if iou := boxIoU(w.Box, g.Box); iou >= minIoU && iou > bestIoU {
				best, bestIoU = j, iou
			}
		}
		if best < 0 {
			if w.Score < scoreThreshold+scoreSlack {
				continue
			}
			return fmt.Errorf("%s %.3f %v has no match", w.Label, w.Score, w.Box)
		}
		used[best] = true
	}
	for j, g := range got {
		if !used[j] && g.Score >= scoreThreshold+scoreSlack {
			return fmt.Errorf("extra %s %.3f %v", g.Label, g.Score, g.Box)
		}
	}
	return nil
}

func boxIoU(a, b [4]float32) float32 {
	w := min(a[2], b[2]) - max(a[0], b[0])
	h := min(a[3], b[3]) - max(a[1], b[1])
	if w <= 0 || h <= 0 {
		return 0
	}
	inter := w * h
	return inter / ((a[2]-a[0])*(a[3]-a[1]) + (b[2]-b[0])*(b[3]-b[1]) - inter)
}

// result is what resultLog keeps of a sink.Result (the Result itself is reused).
type result struct {
	frame int64
	pts   time.Duration
	dets  []detect.Detection
}

// resultLog is a sink keeping every result per stream, in arrival order.
type resultLog struct {
	mu      sync.Mutex
	streams map[string][]result
}

// Write implements sink.Sink.
func (l *resultLog) Write(r *sink.Result) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.streams == nil {
		l.streams = map[string][]result{}
	}
	l.streams[r.Stream] = append(l.streams[r.Stream], result{frame: r.Frame, pts: r.PTS, dets: append([]detect.Detection(nil), r.Detections...)})
	return nil
}

func (l *resultLog) get(stream string) []result {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]result(nil), l.streams[stream]...)
}

func (l *resultLog) byPTS(stream string) map[time.Duration]result {
	m := map[time.Duration]result{}
	for _, r := range l.get(stream) {
		m[r.pts] = r
	}
	return m
}

type logBuffer = testutil.LogBuffer
