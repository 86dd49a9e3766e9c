package mqtt_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/testutil"
	bt "github.com/vinfer/vinfer/internal/testutil/brokertest"
	"github.com/vinfer/vinfer/sink"
)

// bitset counts received sequence numbers, bounded by the run's total.
type bitset struct {
	mu       sync.Mutex
	bits     []uint64
	distinct int
	dups     int
}

func (s *bitset) add(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n < 0 || n >= 64*len(s.bits) {
		return
	}
	w, m := n/64, uint64(1)<<(n%64)
	if s.bits[w]&m != 0 {
		s.dups++
		return
	}
	s.bits[w] |= m
	s.distinct++
}

func (s *bitset) counts() (distinct, dups int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.distinct, s.dups
}

func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return d
}

// rss returns the process's resident set size in bytes (Linux), 0 when unknown.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// BenchmarkSoak is the memory run: an mqtt sink (3.1.1, QoS 1, counts on) written 1000
// events/s (100 results/s of 10 zone.enter events, so also 100 count records/s) for
// VINFER_SOAK_DURATION (default 1m), while the embedded broker is up for VINFER_SOAK_UP
// (default 20s), stopped for VINFER_SOAK_DOWN (default 10s), and so on; then it starts the
// broker for good and waits for the outbox to drain. Every VINFER_SOAK_SAMPLE (default 10s) it
// prints the live Go heap (after a GC), the process's RSS (the broker and its subscriber
// included: same process), the outbox's depth and its bytes on disk; at the end, events
// received (each counted once by sequence number), lost and duplicated. Run it once:
//
//	go test -run XXX -bench Soak -benchtime 1x -timeout 30m ./sink/mqtt
func BenchmarkSoak(b *testing.B) {
	dur := envDuration(b, "VINFER_SOAK_DURATION", time.Minute)
	up := envDuration(b, "VINFER_SOAK_UP", 20*time.Second)
	down := envDuration(b, "VINFER_SOAK_DOWN", 10*time.Second)
	every := envDuration(b, "VINFER_SOAK_SAMPLE", 10*time.Second)
	const perResult, results = 10, 100 // per second
	total := int(dur.Seconds()) * perResult * results
	for range b.N {
		got := &bitset{bits: make([]uint64, total/64+1)}
		subscribe := func(s *mochi.Server) {
			s.Subscribe("vinfer/+/events", 1, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
				_, v, ok := bytes.Cut(pk.Payload, []byte(`"track_id":`))
				if i := bytes.IndexByte(v, ','); ok && i > 0 {
					n, _ := strconv.Atoi(string(v[:i]))
					got.add(n)
				}
			})
		}
		addr, dir := testutil.FreeAddr(b), b.TempDir()
		broker := startBroker(b, addr, nil, nil)
		subscribe(broker)
		k := openSink(b, map[string]any{"url": "mqtt://" + addr, "outbox": map[string]any{"dir": dir}, "max_backoff": "2s", "drain_timeout": "1s"})

		var mu sync.Mutex // broker
		brokerUp := true
		sample := func(at time.Duration) (heap, res uint64) {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			st := k.Stats()
			distinct, _ := got.counts()
			mu.Lock()
			state := map[bool]string{true: "up", false: "down"}[brokerUp]
			mu.Unlock()
			res = rss()
			fmt.Fprintf(os.Stderr, "soak %6.0fs broker %-4s heap %6.1f MiB  rss %6.1f MiB  goroutines %4d  depth %7d (%6.1f MiB, %6.1f MiB on disk)  delivered %8d  received %8d\n",
				at.Seconds(), state, float64(m.HeapInuse)/(1<<20), float64(res)/(1<<20), runtime.NumGoroutine(),
				st.Depth, float64(st.DepthBytes)/(1<<20), float64(dirBytes(dir))/(1<<20), st.Delivered, distinct)
			return m.HeapInuse, res
		}

		// The broker's schedule: up, down, up, … until the end, then up.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(up):
				}
				mu.Lock()
				broker.Close()
				brokerUp = false
				mu.Unlock()
				select {
				case <-stop:
					return
				case <-time.After(down):
				}
				mu.Lock()
				broker = startBroker(b, addr, nil, nil)
				subscribe(broker)
				brokerUp = true
				mu.Unlock()
			}
		})

		var maxHeap, maxRSS, firstHeap, firstRSS uint64
		start := time.Now()
		next := every
		n := 0
		for i := 0; n < total; i++ {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / results)); d > 0 {
				time.Sleep(d)
			}
			r := &sink.Result{Stream: "cam1", Frame: int64(i), Width: 640, Height: 480}
			for range perResult {
				r.Events = append(r.Events, event.Event{ID: event.NewID(time.Now()), Type: event.ZoneEnter, Stream: "cam1",
					Frame: int64(i), Time: time.Now(), TrackID: int64(n), Label: "person", Score: 0.9, Box: [4]float32{1, 2, 3, 4}, Zone: "door"})
				n++
			}
			if err := k.Write(r); err != nil {
				b.Fatal(err)
			}
			if el := time.Since(start); el >= next {
				next += every
				h, r := sample(el)
				if firstHeap == 0 {
					firstHeap, firstRSS = h, r
				}
				maxHeap, maxRSS = max(maxHeap, h), max(maxRSS, r)
			}
		}
		writing := time.Since(start)
		close(stop)
		wg.Wait()
		mu.Lock()
		if !brokerUp {
			broker = startBroker(b, addr, nil, nil)
			subscribe(broker)
			brokerUp = true
		}
		mu.Unlock()
		bt.Wait(b, 10*time.Minute, func() bool { d, _ := got.counts(); return d == total }, "all %d events received", total)
		drained := time.Since(start)
		h, r := sample(drained)
		broker.Close()
		distinct, dups := got.counts()
		st := k.Stats()
		fmt.Fprintf(os.Stderr, "soak: %d events in %v (drained at %v): %d received, %d lost, %d duplicates; heap first %.1f max %.1f end %.1f MiB; rss first %.1f max %.1f end %.1f MiB; failed attempts %d\n",
			total, writing.Round(time.Second), drained.Round(time.Second), distinct, total-distinct, dups,
			float64(firstHeap)/(1<<20), float64(maxHeap)/(1<<20), float64(h)/(1<<20),
			float64(firstRSS)/(1<<20), float64(maxRSS)/(1<<20), float64(r)/(1<<20), st.Failed)
		b.ReportMetric(float64(maxHeap)/(1<<20), "heap-max-MiB")
		b.ReportMetric(float64(maxRSS)/(1<<20), "rss-max-MiB")
		b.ReportMetric(float64(total-distinct), "lost")
		b.ReportMetric(float64(dups), "dups")
	}
}
