package e2e_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/sink"
)

// sampleScene is the README's scene of the bundled sample (cmd/vinfer defaultConfig).
var sampleScene = analytics.Config{
	Zones: []analytics.Zone{{Name: "table", Polygon: []analytics.Point{{380, 350}, {570, 350}, {570, 432}, {380, 432}},
		Classes: []string{"person"}, Inertia: 3, Loiter: analytics.Duration(5 * time.Second)}},
	Lines: []analytics.Line{{Name: "exit", Points: []analytics.Point{{620, 300}, {620, 432}}, Classes: []string{"person"}}},
}

// sceneEvent is what must match between runs: not track ids or frame numbers.
type sceneEvent struct {
	key string // type, zone or line, direction
	pts time.Duration
}

// eventSink keeps the scene events of every result.
type eventSink struct {
	mu     sync.Mutex
	events []sceneEvent
}

func (s *eventSink) Write(r *sink.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range r.Events {
		s.events = append(s.events, sceneEvent{key: fmt.Sprintf("%s zone=%s line=%s dir=%v", e.Type, e.Zone, e.Line, e.Direction), pts: e.PTS})
	}
	return nil
}

// runScene runs the clip once with the given activity settings and returns its scene events
// and the stream's gate snapshot (nil with gating off).
func runScene(t *testing.T, clip string, scene analytics.Config, act *config.Activity) ([]sceneEvent, *defs.Activity, defs.StreamCounters) {
	t.Helper()
	rec := &eventSink{}
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx")}}}
	a := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{rec}})
	s := config.Stream{ID: "sample", Source: clip, Model: "m", Config: scene, Activity: act}
	if err := a.AddStream(s); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	a.Pipeline.Wait()
	st, ok := a.Stream("sample")
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatal("stream sample gone")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return rec.events, st.Activity, st.Counters
}

// compareEvents checks that got has the same events as want (same type, zone or line and
// direction, as many of each), each within tol of its full-rate time.
func compareEvents(t *testing.T, name string, want, got []sceneEvent, tol time.Duration) {
	t.Helper()
	group := func(evs []sceneEvent) map[string][]time.Duration {
		m := map[string][]time.Duration{}
		for _, e := range evs {
			m[e.key] = append(m[e.key], e.pts)
		}
		for _, v := range m {
			sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
		}
		return m
	}
	w, g := group(want), group(got)
	for k, wt := range w {
		gt := g[k]
		if len(gt) != len(wt) {
			t.Errorf("%s: %d × %s, full rate %d (full %v, %s %v)", name, len(gt), k, len(wt), wt, name, gt)
			continue
		}
		for i := range wt {
			if d := (gt[i] - wt[i]).Abs(); d > tol {
				t.Errorf("%s: %s #%d at %v, full rate at %v (%v apart, at most %v)", name, k, i, gt[i], wt[i], d, tol)
			}
		}
	}
	for k, gt := range g {
		if _, ok := w[k]; !ok {
			t.Errorf("%s: %d × %s the full-rate run does not have", name, len(gt), k)
		}
	}
}

// quietClip makes 50 s: 20 s of the sample's first picture (an empty room, still), then the
// sample's first 30 s: a camera that idles, then sees people. 1 s GOPs and B-frames like the sample.
func quietClip(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	dst := filepath.Join(t.TempDir(), "quiet.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", filepath.Join(assets(t), "videos", "one-by-one-person-detection.mp4"),
		"-t", "50", "-vf", "tpad=start_duration=20:start_mode=clone", "-an", "-c:v", "libx264", "-preset", "veryfast",
		"-g", "10", "-bf", "2", "-pix_fmt", "yuv420p", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

// TestActivityMissesNothing: a clip run at full rate, motion-gated and with idle
// key-frame-only decoding gives the same scene events: same types, zones, lines, directions
// and counts, each within one GOP + 200 ms of the full-rate run. The clips: the README's
// sample (1394 frames, 1 s GOPs, B-frames, people in view most of the time), the same scene
// after 20 s of an empty room (the gated run infers half the frames, the idle run decodes 295
// of 500) and the shared street clip (5 s GOPs, busy throughout: nothing gated, nothing lost).
func TestActivityMissesNothing(t *testing.T) {
	// a line across the middle of the street clip and a zone on its right half, every class
	street := analytics.Config{
		Zones: []analytics.Zone{{Name: "right", Polygon: []analytics.Point{{384, 0}, {768, 0}, {768, 432}, {384, 432}}}},
		Lines: []analytics.Line{{Name: "middle", Points: []analytics.Point{{384, 0}, {384, 432}}}},
	}
	for _, c := range []struct {
		name, clip string
		scene      analytics.Config
		gop        time.Duration
		busy       bool // something moves or is tracked in every frame: nothing to save
	}{
		{"sample", filepath.Join(assets(t), "videos", "one-by-one-person-detection.mp4"), sampleScene, time.Second, false},
		{"quiet start", quietClip(t), sampleScene, time.Second, false},
		{"street", filepath.Join(assets(t), "videos", "person-bicycle-car-detection_reenc.mp4"), street, 5 * time.Second, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			full, fa, fc := runScene(t, c.clip, c.scene, nil)
			if fa != nil {
				t.Fatalf("gating off by default, got %+v", fa)
			}
			if len(full) < 4 {
				t.Fatalf("full-rate run: %d events", len(full))
			}
			gated, ga, gc := runScene(t, c.clip, c.scene, &config.Activity{Mode: config.ActivityGate})
			idle, ia, ic := runScene(t, c.clip, c.scene, &config.Activity{Mode: config.ActivityIdle,
				IdleAfter: config.Duration(time.Second), MaxGOP: config.Duration(c.gop + time.Second)})
			t.Logf("full: %d events, decoded %d, inferred %d; gated: %d events, inferred %d, gated %d; idle: %d events, decoded %d, inferred %d, probes %d, wakes %d, burst units %d, GOP %v",
				len(full), fc.Decoded, fc.Inferred, len(gated), gc.Inferred, ga.Gated, len(idle), ic.Decoded, ic.Inferred, ia.Probes, ia.Wakes, ia.BurstUnits, ia.GOP)
			compareEvents(t, "gated", full, gated, c.gop+200*time.Millisecond)
			compareEvents(t, "idle", full, idle, c.gop+200*time.Millisecond)
			if ga == nil || !c.busy && (ga.Gated == 0 || gc.Inferred >= fc.Inferred) {
				t.Errorf("gated run: inferred %d of full rate's %d, gate %+v", gc.Inferred, fc.Inferred, ga)
			}
			if ia == nil || ia.GOP != c.gop || ia.IdleOff != "" {
				t.Errorf("idle run: gate %+v, want a GOP of %v and idle decoding available", ia, c.gop)
			}
		})
	}
}
