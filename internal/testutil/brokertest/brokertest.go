// Package brokertest holds what the broker sinks' tests share: results carrying events,
// counting received events by id, waiting on conditions with a timeout, latency histograms
// (latency.go), a test CA (certs.go) and the crash test's parent and child (kill.go). Tests
// only.
package brokertest

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
)

// Timeout is the default bound of Wait: generous, for a loaded 2-core machine.
const Timeout = 60 * time.Second

// Result returns a result of stream at frame with n zone.enter events (fresh ids) and one
// detection.
func Result(stream string, frame int64, n int) *sink.Result {
	r := &sink.Result{Stream: stream, Frame: frame, PTS: time.Duration(frame) * 40 * time.Millisecond,
		Width: 640, Height: 480, Model: "m",
		Detections: []detect.Detection{{ClassID: 0, Label: "person", Score: 0.9, Box: [4]float32{1, 2, 3, 4}}}}
	for range n {
		r.Events = append(r.Events, event.Event{ID: event.NewID(time.Now()), Type: event.ZoneEnter,
			Stream: stream, Frame: frame, Time: time.Now(), TrackID: frame, Label: "person",
			Score: 0.9, Box: [4]float32{1, 2, 3, 4}, Zone: "door"})
	}
	return r
}

// Seen counts received messages by id; safe for concurrent use.
type Seen struct {
	mu sync.Mutex
	m  map[string]int
}

// Add counts one message with id.
func (s *Seen) Add(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]int{}
	}
	s.m[id]++
}

// Distinct returns the number of distinct ids; Dups the messages beyond the first of each id.
func (s *Seen) Distinct() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Dups returns the number of messages received more than once.
func (s *Seen) Dups() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := 0
	for _, n := range s.m {
		d += n - 1
	}
	return d
}

// Has reports whether id was received.
func (s *Seen) Has(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[id] > 0
}

// Wait is testutil.Eventually with a formatted description.
func Wait(t testing.TB, timeout time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	testutil.Eventually(t, timeout, fmt.Sprintf(msg, args...), cond)
}

// Feed writes results of 2 events each to w, paced at about one per millisecond, from a
// goroutine of its own; stop ends it and returns the events written.
func Feed(w sink.Sink) (stop func() int) {
	quit, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		for ; ; n++ {
			select {
			case <-quit:
				done <- 2 * n
				return
			default:
			}
			w.Write(Result("cam1", int64(n), 2))
			time.Sleep(time.Millisecond) // pacing, not a wait
		}
	}()
	return func() int { close(quit); return <-done }
}

// Outage is how long a restart test keeps its broker down: $VINFER_BROKER_OUTAGE, default 3 s.
func Outage(t testing.TB) time.Duration {
	if v := os.Getenv("VINFER_BROKER_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return 3 * time.Second
}

var sinkSeq atomic.Int64

// OpenSink opens a sink of type typ with open (the kind's Open) on outbox folder dir, with
// fast retries (backoff 20–500 ms; timeout 5 s where the kind has one) and, unless settings
// names it, a name of its own (tests run in parallel; sink names are process-wide). It is
// closed at the test's end.
func OpenSink(t testing.TB, typ string, open func(config.Sink, sink.Env) (sink.Sink, error), dir string, settings map[string]any) *brokered.Sink {
	t.Helper()
	base := map[string]any{"min_backoff": "20ms", "max_backoff": "500ms", "timeout": "5s"}
	if _, ok := settings["name"]; !ok {
		base["name"] = fmt.Sprintf("%s-%d", typ, sinkSeq.Add(1))
	}
	for k, v := range settings {
		base[k] = v
	}
	s, err := open(config.NewSink(typ, base), sink.Env{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	k := s.(*brokered.Sink)
	t.Cleanup(func() { k.Close() })
	return k
}
