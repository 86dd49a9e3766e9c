package brokertest

import (
	"math"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/sink"
)

// Latency measures write-to-subscriber latency by event id in a bounded histogram (8 buckets
// per octave: quantiles within 9%); safe for concurrent use.
type Latency struct {
	sent sync.Map // id → time.Time, deleted on arrival
	mu   sync.Mutex
	n    int
	hist [64 * 8]int
}

func bucket(d time.Duration) int {
	if d < 1 {
		return 0
	}
	return min(int(math.Log2(float64(d))*8), 64*8-1)
}

// Sent records when the event id was written.
func (l *Latency) Sent(id string, t time.Time) { l.sent.Store(id, t) }

// Received records the arrival of id (a repeat is ignored).
func (l *Latency) Received(id string) {
	now := time.Now()
	v, ok := l.sent.LoadAndDelete(id)
	if !ok {
		return
	}
	l.mu.Lock()
	l.hist[bucket(now.Sub(v.(time.Time)))]++
	l.n++
	l.mu.Unlock()
}

// Count returns the events received.
func (l *Latency) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Quantile returns the q-quantile of the latencies received (0 < q < 1), as its bucket's
// upper bound.
func (l *Latency) Quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	rank, seen := int(q*float64(l.n)), 0
	for i, c := range l.hist {
		if seen += c; seen > rank {
			return time.Duration(math.Exp2(float64(i+1) / 8))
		}
	}
	return 0
}

// RunLatency writes one event per result to k at rate events/s for VINFER_BENCH_DURATION
// (default 10s), after one warm-up event, then waits for all of them, and logs p50, p99 and the heap in use at the start
// and the end. It skips unless VINFER_BENCH is set.
func RunLatency(t *testing.T, name string, k sink.Sink, l *Latency, rate int) {
	if os.Getenv("VINFER_BENCH") == "" {
		t.Skip("set VINFER_BENCH=1 (and VINFER_BENCH_DURATION) to measure latency")
	}
	dur := 10 * time.Second
	if v := os.Getenv("VINFER_BENCH_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		dur = d
	}
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	// Warm up: the first event waits for the connection.
	w := Result("cam1", -1, 1)
	l.Sent(w.Events[0].ID.String(), time.Now())
	if err := k.Write(w); err != nil {
		t.Fatal(err)
	}
	Wait(t, Timeout, func() bool { return l.Count() == 1 }, "the first event")
	l.mu.Lock()
	l.n, l.hist = 0, [64 * 8]int{}
	l.mu.Unlock()
	h0 := heap()
	start := time.Now()
	total := int(dur.Seconds() * float64(rate))
	for i := range total {
		if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
			time.Sleep(d)
		}
		r := Result("cam1", int64(i), 1)
		l.Sent(r.Events[0].ID.String(), time.Now())
		if err := k.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	Wait(t, Timeout, func() bool { return l.Count() == total }, "%d events (have %d)", total, l.Count())
	h1 := heap()
	t.Logf("%s: %d events at %d/s over %v: p50 %v, p99 %v; heap in use %.1f MiB → %.1f MiB", name, total, rate,
		dur, l.Quantile(0.5).Round(time.Microsecond), l.Quantile(0.99).Round(time.Microsecond),
		float64(h0)/(1<<20), float64(h1)/(1<<20))
}
