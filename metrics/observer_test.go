package metrics_test

import (
	"testing"

	"github.com/vinfer/vinfer/metrics"
)

// TestObserveAllocs: the per-frame hook allocates nothing once a model and stream were seen.
func TestObserveAllocs(t *testing.T) {
	mx := metrics.New()
	r := resultFor("cam", "m")
	mx.ObserveResult(r)
	mx.ObserveBatch("m", 4)
	if n := testing.AllocsPerRun(1000, func() { mx.ObserveResult(r); mx.ObserveBatch("m", 4) }); n != 0 {
		t.Fatalf("ObserveResult+ObserveBatch allocate %v times per frame, want 0", n)
	}
}

func BenchmarkObserveResult(b *testing.B) {
	mx := metrics.New()
	r := resultFor("cam", "m")
	b.ReportAllocs()
	for b.Loop() {
		mx.ObserveResult(r)
	}
}
