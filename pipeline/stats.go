package pipeline

import (
	"sync"
	"sync/atomic"
	"time"
)

// DropReason says why a frame did not reach inference.
type DropReason uint8

// Drop reasons, each counted per stream.
const (
	DropQueueFull   DropReason = iota // inference behind a live stream: oldest queued frame dropped
	DropInterval                      // skipped by the stream's inference interval (every Nth frame)
	DropFPSCap                        // over the stream's max_fps
	DropDecodeError                   // the access unit could not be decoded
	DropInferError                    // the inference run failed
	DropShutdown                      // decoded while the stream was stopping
	numDropReasons
)

var dropReasonNames = [numDropReasons]string{"queue_full", "interval", "fps_cap", "decode_error", "infer_error", "shutdown"}

func (r DropReason) String() string { return dropReasonNames[r] }

// DropReasons lists every reason, in order, for reporting.
func DropReasons() []DropReason {
	out := make([]DropReason, numDropReasons)
	for i := range out {
		out[i] = DropReason(i)
	}
	return out
}

// StreamStats are one stream's counters, updated atomically by its stages.
type StreamStats struct {
	AccessUnits atomic.Int64
	Decoded     atomic.Int64
	Inferred    atomic.Int64
	Dropped     [numDropReasons]atomic.Int64
	Detections  atomic.Int64
	// LatencyNanos sums frame→result latency over inferred frames.
	LatencyNanos atomic.Int64
	started      time.Time
	endedAt      atomic.Int64 // unix nanos when the stream's loop ended, 0 while running

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
