package e2e_test

import (
	"github.com/vinfer/vinfer/internal/apptest"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
)

func assets(t testing.TB) string { return filepath.Join(testutil.Root(t), "assets") }

// recorder is a sink keeping (stream, frame, PTS) in arrival order.
type recorder struct {
	mu     sync.Mutex
	frames map[string][]int64
	pts    map[string][]time.Duration
}

func (r *recorder) Write(res *sink.Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.frames == nil {
		r.frames = map[string][]int64{}
		r.pts = map[string][]time.Duration{}
	}
	r.frames[res.Stream] = append(r.frames[res.Stream], res.Frame)
	r.pts[res.Stream] = append(r.pts[res.Stream], res.PTS)
	return nil
}

type syncBuffer = testutil.LogBuffer

// start runs an app with the bundled YOLOX-Nano as model "m" and frame leak checks on.
func start(t *testing.T, threads int, streams ...config.Stream) (*app.App, *recorder, *syncBuffer) {
	t.Helper()
	frame.SetDebug(true)
	t.Cleanup(func() { frame.SetDebug(false) })
	logs := &syncBuffer{}
	rec := &recorder{}
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx"), IntraOpThreads: threads}}}
	a := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{rec},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	for _, s := range streams {
		if s.Model == "" {
			s.Model = "m"
		}
		if err := a.AddStream(s); err != nil {
			a.Stop()
			t.Fatal(err)
		}
	}
	return a, rec, logs
}

// shortFrames is the length of the clips cut for the tests that infer every frame: two GOPs of
// car-detection.mp4 (no B-frames), enough for ordering, blocking and drops.
const shortFrames = 120

func checkNoLeaks(t *testing.T, logs *syncBuffer) { testutil.CheckNoFrameLeaks(t, logs) }

// TestFilesLoseNothing: file streams block instead of dropping: every decoded frame is inferred,
// results arrive in per-stream order, and every frame returns to its pool.
func TestFilesLoseNothing(t *testing.T) {
	a, rec, logs := start(t, 0,
		config.Stream{ID: "mp4", Source: testutil.ShortClip(t, "videos/car-detection.mp4", shortFrames)},
		config.Stream{ID: "ts", Source: testutil.ShortClip(t, "videos/car-detection_remux.ts", shortFrames)})
	a.Pipeline.Wait()
	streams := a.Pipeline.Streams()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	checkNoLeaks(t, logs)
	for _, s := range streams {
		if s.Err != nil {
			t.Fatalf("%s: %v", s.ID, s.Err)
		}
		d, n := s.Stats.Decoded.Load(), s.Stats.Inferred.Load()
		if d != shortFrames || n != shortFrames || s.Stats.DroppedTotal() != 0 {
			t.Errorf("%s: decoded %d inferred %d dropped %d, want %d/%d/0", s.ID, d, n, s.Stats.DroppedTotal(), shortFrames, shortFrames)
		}
		for i, f := range rec.frames[s.ID] {
			if f != int64(i) {
				t.Fatalf("%s: result %d is frame %d: order lost", s.ID, i, f)
			}
		}
	}
}

// TestSlowInferenceStaysBounded: six drop-oldest streams read files as fast as they decode
// while one single-threaded inference worker falls behind. Frames in flight stay bounded,
// every frame not inferred is a counted drop, and nothing leaks.
func TestSlowInferenceStaysBounded(t *testing.T) {
	v := testutil.ShortClip(t, "videos/car-detection.mp4", shortFrames)
	var ss []config.Stream
	for _, id := range []string{"a", "b", "c", "d", "e", "f"} {
		ss = append(ss, config.Stream{ID: id, Source: v, Drop: config.DropOldest})
	}
	a, _, logs := start(t, 1, ss...)
	maxInFlight := int64(0)
	done := make(chan struct{})
	go func() { a.Pipeline.Wait(); close(done) }()
	for tick := time.NewTicker(5 * time.Millisecond); ; {
		var inflight int64
		for _, s := range a.Pipeline.Streams() {
			inflight += s.Stats.Decoded.Load() - s.Stats.Inferred.Load() - s.Stats.DroppedTotal()
		}
		maxInFlight = max(maxInFlight, inflight)
		select {
		case <-tick.C:
			continue
		case <-done:
		}
		tick.Stop()
		break
	}
	streams := a.Pipeline.Streams()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	checkNoLeaks(t, logs)
	var dropped, inferred int64
	for _, s := range streams {
		d, n, q := s.Stats.Decoded.Load(), s.Stats.Inferred.Load(), s.Stats.Dropped[pipeline.DropQueueFull].Load()
		if d != shortFrames || n+q != d {
			t.Errorf("%s: decoded %d = inferred %d + dropped %d does not hold", s.ID, d, n, q)
		}
		dropped += q
		inferred += n
	}
	// Per stream: its queue (2), the frame being preprocessed, a batch being copied.
	if bound := int64(len(streams) * 4); maxInFlight > bound {
		t.Errorf("%d frames in flight, bound %d", maxInFlight, bound)
	}
	if dropped == 0 {
		t.Error("no drops counted although inference is slower than decoding")
	}
	t.Logf("inferred %d, dropped (queue full) %d, most frames in flight %d", inferred, dropped, maxInFlight)
}

// TestIntervalAndFPSCap: skipped frames are counted by reason; max_fps counts wall-clock
// seconds, and a file (drop: block) waits for its turn instead of dropping.
func TestIntervalAndFPSCap(t *testing.T) {
	v := filepath.Join(assets(t), "videos", "car-detection.mp4") // 12.5 fps, 377 frames
	began := time.Now()
	a, _, logs := start(t, 0,
		config.Stream{ID: "every5", Source: v, Interval: 5},
		config.Stream{ID: "every5-20fps", Source: v, Interval: 5, MaxFPS: 20})
	a.Pipeline.Wait()
	took := time.Since(began)
	streams := a.Pipeline.Streams()
	a.Stop()
	checkNoLeaks(t, logs)
	for _, st := range streams {
		e := st.Stats
		if e.Inferred.Load() != 76 || e.Dropped[pipeline.DropInterval].Load() != 301 || e.Dropped[pipeline.DropFPSCap].Load() != 0 {
			t.Errorf("%s: inferred %d skipped %d capped %d, want 76/301/0", st.ID, e.Inferred.Load(),
				e.Dropped[pipeline.DropInterval].Load(), e.Dropped[pipeline.DropFPSCap].Load())
		}
	}
	if took < 75*time.Second/20 { // 76 frames at most 20 a second: 75 gaps of 50 ms at least
		t.Errorf("max_fps 20: 76 frames inferred in %v", took)
	}
	t.Logf("76 frames at max_fps 20 in %v", took)
}

// TestRealtimeFileFPSCap: a looping file with realtime: true is a stand-in camera (live, drop:
// oldest), and max_fps caps its inferred frames per wall-clock second, dropping the rest
// (fps_cap). Bounds only in the direction a slow machine cannot break.
func TestRealtimeFileFPSCap(t *testing.T) {
	v := filepath.Join(assets(t), "videos", "car-detection.mp4") // 12.5 fps
	began := time.Now()
	a, _, logs := start(t, 0, config.Stream{ID: "cam", Source: v, Loop: true, Realtime: true, MaxFPS: 5})
	st := func() pipeline.StreamStatus { s, _ := a.Pipeline.Stream("cam"); return s }
	testutil.Eventually(t, 60*time.Second, "10 frames inferred", func() bool {
		s := st()
		return s.Stats != nil && s.Stats.Inferred.Load() >= 10 && s.Stats.Dropped[pipeline.DropFPSCap].Load() > 0
	})
	s := st()
	n, decoded, took := s.Stats.Inferred.Load(), s.Stats.Decoded.Load(), time.Since(began)
	a.Stop()
	checkNoLeaks(t, logs)
	if !s.Live {
		t.Error("a realtime file is not live")
	}
	if limit := int64(took.Seconds()*5) + 1; n > limit {
		t.Errorf("max_fps 5: %d frames inferred in %v (at most %d)", n, took, limit)
	}
	if limit := int64(took.Seconds()*12.5) + 2; decoded > limit {
		t.Errorf("realtime: %d frames decoded in %v (at most %d at 12.5 fps)", decoded, took, limit)
	}
	t.Logf("%d decoded, %d inferred in %v", decoded, n, took)
}

// TestStopDrainsAndReleases: stopping mid-stream (as on SIGINT) drains and releases everything.
func TestStopDrainsAndReleases(t *testing.T) {
	v := filepath.Join(assets(t), "videos", "person-bicycle-car_hevc.mp4")
	a, _, logs := start(t, 0,
		config.Stream{ID: "loop1", Source: v, Loop: true},
		config.Stream{ID: "loop2", Source: v, Loop: true, Drop: config.DropOldest})
	inferred := func(id string) int64 {
		st, _ := a.Pipeline.Stream(id)
		if st.Stats == nil {
			return 0
		}
		return st.Stats.Inferred.Load()
	}
	testutil.Eventually(t, 60*time.Second, "both streams inferring", func() bool { return inferred("loop1") > 10 && inferred("loop2") > 10 })
	if err := a.RemoveStream("loop2"); err != nil {
		t.Fatal(err)
	}
	n := inferred("loop1")
	testutil.Eventually(t, 60*time.Second, "loop1 going on after loop2 left", func() bool { return inferred("loop1") > n+5 })
	streams := a.Pipeline.Streams()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	checkNoLeaks(t, logs)
	if len(streams) != 1 || streams[0].Stats.Inferred.Load() == 0 {
		t.Fatalf("streams after removal: %+v", streams)
	}
	s := streams[0].Stats
	if s.Decoded.Load() < s.Inferred.Load()+s.DroppedTotal() {
		t.Fatalf("decoded %d < inferred %d + dropped %d", s.Decoded.Load(), s.Inferred.Load(), s.DroppedTotal())
	}
}

// TestCascade runs UltraFace on YOLOX's person boxes: the face found in the reference frame
// region appears as a child of the person detection, in frame pixels.
func TestCascade(t *testing.T) {
	a := assets(t)
	frame.SetDebug(true)
	defer frame.SetDebug(false)
	cfg := &config.Config{Models: []config.Model{
		{Name: "people", Path: filepath.Join(a, "models/yolox_nano_416.onnx"),
			Cascade: []config.Cascade{{Model: "faces", Classes: []string{"person"}, MinScore: 0.5}}},
		{Name: "faces", Path: filepath.Join(a, "models/ultraface_rfb_320.onnx")},
	}}
	var mu sync.Mutex
	faces, persons := 0, 0
	var lines []string
	rec := sinkFunc(func(r *sink.Result) error {
		mu.Lock()
		defer mu.Unlock()
		for i, d := range r.Detections {
			if d.Label != "person" {
				continue
			}
			persons++
			for k, p := range r.SecondaryParent {
				if p != i {
					continue
				}
				faces++
				c := r.Secondary[k]
				if c.Box[0] < d.Box[0]-1 || c.Box[2] > d.Box[2]+1 || c.Box[1] < d.Box[1]-1 || c.Box[3] > d.Box[3]+1 {
					t.Errorf("frame %d: face %v outside its person %v", r.Frame, c.Box, d.Box)
				}
			}
		}
		if len(r.Secondary) > 0 && len(lines) < 2 {
			lines = append(lines, string(sink.AppendJSON(nil, r)))
		}
		return nil
	})
	logs := &syncBuffer{}
	ap := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{rec},
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if _, err := ap.Registry.Get("people"); err != nil {
		t.Fatal(err)
	}
	// Frames 680–700 of the sample: a person facing the camera (MANIFEST: face at frame 690).
	if err := ap.AddStream(config.Stream{ID: "s", Source: filepath.Join(a, "videos/one-by-one-person-detection.mp4"), Model: "people", Interval: 10}); err != nil {
		t.Fatal(err)
	}
	ap.Pipeline.Wait()
	ap.Stop()
	checkNoLeaks(t, logs)
	if persons == 0 || faces == 0 {
		t.Fatalf("persons %d, faces attached %d", persons, faces)
	}
	if !strings.Contains(strings.Join(lines, ""), `"children":[{"model":"faces","class_id":0,"label":"face"`) {
		t.Fatalf("JSON lacks children: %s", lines)
	}
	t.Logf("%d person detections, %d faces attached; e.g. %s", persons, faces, lines[0])
}

type sinkFunc func(*sink.Result) error

func (f sinkFunc) Write(r *sink.Result) error { return f(r) }
