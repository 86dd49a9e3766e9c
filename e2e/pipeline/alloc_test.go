package e2e_test

import (
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/testutil"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/sink"
)

// BenchmarkSteadyStateAllocs measures heap allocations per inferred frame over the whole hot
// path (read → decode → preprocess → queue → batch → infer → decode outputs → sink), in steady
// state: two looping file streams into FastestDet, counted over a window after warm-up, with the
// tracker (the default) and without.
//
//	go test -run XXX -bench SteadyStateAllocs -benchtime 1x ./pipeline/
func BenchmarkSteadyStateAllocs(b *testing.B) {
	b.Run("tracker", func(b *testing.B) { steadyStateAllocs(b, nil) })
	b.Run("tracker=none", func(b *testing.B) { steadyStateAllocs(b, &config.Tracker{Disabled: true}) })
}

func steadyStateAllocs(b *testing.B, tracker *config.Tracker) {
	a := assets(b)
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(a, "models/fastestdet_352.onnx")}}}
	ap := apptest.MustApp(b, cfg, app.Options{Sinks: []sink.Sink{&sink.JSONL{W: discardWriter{}}}})
	for _, id := range []string{"a", "b"} {
		if err := ap.AddStream(config.Stream{ID: id, Source: filepath.Join(a, "videos/car-detection.mp4"), Model: "m", Loop: true, Tracker: tracker}); err != nil {
			b.Fatal(err)
		}
	}
	inferred := func() (n int64) {
		for _, s := range ap.Pipeline.Streams() {
			n += s.Stats.Inferred.Load()
		}
		return n
	}
	// Warm-up: a whole pass of the clip in each stream, so pools are filled and every buffer
	// (detections, tracks) has grown to its largest.
	testutil.Eventually(b, 10*time.Minute, "a pass of the clip in every stream", func() bool {
		for _, s := range ap.Pipeline.Streams() {
			if s.Stats.Decoded.Load() < 2*carFrames {
				return false
			}
		}
		return true
	})
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	n0 := inferred()
	time.Sleep(5 * time.Second) // the measurement window
	runtime.ReadMemStats(&m1)
	n := inferred() - n0
	ap.Stop()
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n), "allocs/frame")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(n), "B/frame")
	b.ReportMetric(float64(m1.NumGC-m0.NumGC)*1000/float64(n), "GC/1000frames")
	b.ReportMetric(float64(n)/5, "fps")
}

// carFrames is the frame count of car-detection.mp4.
const carFrames = 377

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
