package pipeline

import (
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/objects"
	"sync"
	"sync/atomic"
	"time"
)

// Drop reasons (defs.DropReason), re-exported for the pipeline's callers.
const (
	DropQueueFull   = defs.DropQueueFull
	DropInterval    = defs.DropInterval
	DropFPSCap      = defs.DropFPSCap
	DropDecodeError = defs.DropDecodeError
	DropInferError  = defs.DropInferError
	DropShutdown    = defs.DropShutdown
)

// StreamStats are one stream's counters, updated atomically by its stages.
type StreamStats struct {
	AccessUnits atomic.Int64
	Decoded     atomic.Int64
	Inferred    atomic.Int64
	Dropped     [defs.NumDropReasons]atomic.Int64
	Detections  atomic.Int64
	// LatencyNanos sums frame→result latency over inferred frames.
	LatencyNanos atomic.Int64
	started      time.Time
	endedAt      atomic.Int64 // unix nanos when the stream's loop ended, 0 while running

	rules *objects.Stage // the stream's object rules, whose counters Counters reads; nil: none

	mu       sync.Mutex
	perClass map[string]int64
}

func newStreamStats() *StreamStats {
	return &StreamStats{started: time.Now(), perClass: map[string]int64{}}
}

// DroppedTotal sums drops over all reasons.
func (s *StreamStats) DroppedTotal() int64 {
	var n int64
	for i := range s.Dropped {
		n += s.Dropped[i].Load()
	}
	return n
}

// Elapsed is how long the stream ran (until now, or until it ended).
func (s *StreamStats) Elapsed() time.Duration {
	if e := s.endedAt.Load(); e != 0 {
		return time.Unix(0, e).Sub(s.started)
	}
	return time.Since(s.started)
}

// PerClass returns a copy of the detection count per label.
func (s *StreamStats) PerClass() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int64, len(s.perClass))
	for k, v := range s.perClass {
		out[k] = v
	}
	return out
}

func (s *StreamStats) countClass(label string) {
	s.mu.Lock()
	s.perClass[label]++
	s.mu.Unlock()
}

// Counters returns a snapshot of the counters.
func (s *StreamStats) Counters() defs.StreamCounters {
	c := defs.StreamCounters{AccessUnits: s.AccessUnits.Load(), Decoded: s.Decoded.Load(),
		Inferred: s.Inferred.Load(), Detections: s.Detections.Load(), LatencyNanos: s.LatencyNanos.Load()}
	for i := range s.Dropped {
		c.Dropped[i] = s.Dropped[i].Load()
	}
	if r := s.rules; r != nil {
		c.Masked, c.Filtered, c.Merged = int64(r.Masked.Load()), int64(r.Filtered.Load()), int64(r.Merged.Load())
	}
	return c
}
