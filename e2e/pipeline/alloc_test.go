package e2e_test

import (
	"github.com/vinfer/vinfer/internal/apptest"
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
// state: two looping file streams into FastestDet, counted over a window after warm-up.
//
//	go test -run XXX -bench SteadyStateAllocs -benchtime 1x ./pipeline/
func BenchmarkSteadyStateAllocs(b *testing.B) {
	a := assets(b)
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(a, "models/fastestdet_352.onnx")}}}
	ap := apptest.MustApp(b, cfg, app.Options{Sinks: []sink.Sink{&sink.JSONL{W: discardWriter{}}}})
	for _, id := range []string{"a", "b"} {
		if err := ap.AddStream(config.Stream{ID: id, Source: filepath.Join(a, "videos/car-detection.mp4"), Model: "m", Loop: true}); err != nil {
			b.Fatal(err)
		}
	}
	inferred := func() (n int64) {
		for _, s := range ap.Pipeline.Streams() {
			n += s.Stats.Inferred.Load()
		}
		return n
	}
	time.Sleep(3 * time.Second) // warm-up: pools filled, buffers grown
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	n0 := inferred()
	time.Sleep(5 * time.Second)
	runtime.ReadMemStats(&m1)
	n := inferred() - n0
	ap.Stop()
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/float64(n), "allocs/frame")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/float64(n), "B/frame")
	b.ReportMetric(float64(m1.NumGC-m0.NumGC)*1000/float64(n), "GC/1000frames")
	b.ReportMetric(float64(n)/5, "fps")
}

type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
