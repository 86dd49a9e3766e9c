package e2e_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/sink"
)

// passSink counts each stream's line crossings in its first pass of a looped clip (a looped
// file's PTS keep increasing: the first pass is before pass).
type passSink struct {
	pass    time.Duration
	mu      sync.Mutex
	looped  map[string]bool
	crossed map[string]int
}

func (s *passSink) Write(r *sink.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.PTS >= s.pass {
		s.looped[r.Stream] = true
		return nil
	}
	for _, e := range r.Events {
		if e.Type == event.LineCross {
			s.crossed[r.Stream]++
		}
	}
	return nil
}

func (s *passSink) get(id string) (crossed int, looped bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crossed[id], s.looped[id]
}

// loadClips makes the test's looping cameras: car-detection.mp4's 377 frames at 25 fps (the
// same pictures, twice as fast: a 15 s pass) and a still scene (flat gray, 320×240, 25 fps).
func loadClips(t testing.TB) (cars, still string) {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	dir := t.TempDir()
	cars, still = filepath.Join(dir, "cars25.mp4"), filepath.Join(dir, "still.mp4")
	for _, args := range [][]string{
		{"-i", filepath.Join(assets(t), "videos", "car-detection.mp4"), "-vf", "setpts=PTS/2", "-r", "25", "-an",
			"-c:v", "libx264", "-preset", "ultrafast", "-crf", "18", "-g", "25", "-bf", "0", "-pix_fmt", "yuv420p", cars},
		{"-f", "lavfi", "-i", "color=c=0x808080:s=320x240:r=25", "-t", "16", "-c:v", "libx264", "-preset", "ultrafast",
			"-g", "25", "-pix_fmt", "yuv420p", still},
	} {
		if out, err := exec.Command("ffmpeg", append([]string{"-v", "error", "-nostdin", "-y"}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg: %v\n%s", err, out)
		}
	}
	return cars, still
}

// loadRun is one side-by-side run of TestActivityCountsUnderLoad: per set (full, gated), the
// car camera's crossings in its first pass and the share of its decoded frames inferred.
type loadRun struct {
	crossings [2]int
	inferred  [2]float64
	decoded   [2]int64
}

// countsUnderLoad runs the two camera sets side by side (see TestActivityCountsUnderLoad) with
// stills still cameras each, until both car cameras are past their first pass.
func countsUnderLoad(t testing.TB, stills int) loadRun {
	cars, still := loadClips(t)
	thr := float32(0.2)
	model := filepath.Join(assets(t), "models/yolox_nano_416.onnx")
	rec := &passSink{pass: 377 * 40 * time.Millisecond, looped: map[string]bool{}, crossed: map[string]int{}}
	sets := [2]string{"full", "gated"}
	cfg := &config.Config{Models: []config.Model{
		{Name: sets[0], Path: model, ScoreThreshold: &thr, IntraOpThreads: 1},
		{Name: sets[1], Path: model, ScoreThreshold: &thr, IntraOpThreads: 1},
	}}
	a := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{rec}})
	defer a.Stop()
	for _, set := range sets {
		var act *config.Activity
		if set == "gated" {
			act = &config.Activity{Mode: config.ActivityGate}
		}
		streams := []config.Stream{{ID: set + "-cars", Source: cars, Model: set, Loop: true, Realtime: true, Activity: act,
			Config:  analytics.Config{Lines: lines(vehicleLabels)},
			Tracker: &config.Tracker{TrackThresh: 0.3, NewTrackThresh: 0.35}}}
		for i := range stills {
			streams = append(streams, config.Stream{ID: fmt.Sprintf("%s-still%d", set, i), Source: still, Model: set,
				Loop: true, Realtime: true, Activity: act})
		}
		for _, s := range streams {
			if err := a.AddStream(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	testutil.Eventually(t, 90*time.Second, "both car cameras past their first pass", func() bool {
		_, f := rec.get("full-cars")
		_, g := rec.get("gated-cars")
		return f && g
	})
	var r loadRun
	for i, set := range sets {
		st, ok := a.Pipeline.Stream(set + "-cars")
		if !ok {
			t.Fatalf("stream %s-cars gone", set)
		}
		r.decoded[i] = st.Stats.Decoded.Load()
		r.inferred[i] = float64(st.Stats.Inferred.Load()) / float64(max(r.decoded[i], 1))
		r.crossings[i], _ = rec.get(set + "-cars")
	}
	return r
}

// TestActivityCountsUnderLoad: counting under load gets better with gating, not worse
// (issue 30 item 4, issue 29 item 4). Two camera sets run side by side in one app, each on
// its own instance of YOLOX-Nano with one inference thread (a deliberately small budget, the
// same for both): a looping real-time car clip counted by 5 lines across the road, beside 5
// looping still cameras. The full-rate set infers every frame of all 6 (150 frames/s asked of
// one thread: the car camera's frames are dropped and its tracks broken); the gated set
// (activity mode gate) infers the still cameras once per refresh. Over the car clip's first
// pass, the gated car camera counts at least as many crossings as the full-rate one, and
// infers a larger share of its frames. Both sets see the same machine load at the same time,
// so the comparison holds however loaded the machine is.
func TestActivityCountsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a 15 s real-time pass")
	}
	r := countsUnderLoad(t, 5)
	t.Logf("first pass: full rate %d crossings (%.0f %% of %d frames inferred), gated %d crossings (%.0f %% of %d inferred); 5 lines × 4 cars ≈ 20",
		r.crossings[0], 100*r.inferred[0], r.decoded[0], r.crossings[1], 100*r.inferred[1], r.decoded[1])
	if r.crossings[1] < r.crossings[0] {
		t.Errorf("gated: %d crossings, fewer than full rate's %d", r.crossings[1], r.crossings[0])
	}
	if r.inferred[1] <= r.inferred[0] {
		t.Errorf("gated car camera inferred %.2f of its frames, full rate %.2f: the still cameras were not gated", r.inferred[1], r.inferred[0])
	}
}

// BenchmarkCountsUnderLoad measures TestActivityCountsUnderLoad's comparison with 1, 3 and 5
// still cameras per set: the car camera's crossings in one pass (about 20 expected) and its
// share of frames inferred, full rate and gated, side by side (docs/benchmarks-activity.md).
// Run with -benchtime=1x: each iteration is a real-time pass of 15 s.
func BenchmarkCountsUnderLoad(b *testing.B) {
	for _, stills := range []int{1, 3, 5} {
		b.Run(fmt.Sprintf("stills=%d", stills), func(b *testing.B) {
			var sum loadRun
			for range b.N {
				r := countsUnderLoad(b, stills)
				for i := range 2 {
					sum.crossings[i] += r.crossings[i]
					sum.inferred[i] += r.inferred[i]
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(sum.crossings[0])/n, "full-crossings/pass")
			b.ReportMetric(float64(sum.crossings[1])/n, "gated-crossings/pass")
			b.ReportMetric(100*sum.inferred[0]/n, "full-inferred-%")
			b.ReportMetric(100*sum.inferred[1]/n, "gated-inferred-%")
		})
	}
}
