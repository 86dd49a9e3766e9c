package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/pipeline"
)

// overload watches each running stream's frames dropped because inference is behind
// (queue_full) against the frames meant for inference (decoded, less those skipped on
// purpose by interval or max_fps) over a sliding window: over ratio the stream is degraded,
// at half of ratio or below it runs again. One log line per change.
type overload struct {
	ratio  float64
	window time.Duration
	log    *slog.Logger

	mu      sync.Mutex
	streams map[*pipeline.StreamStats]*overloadState // by stream instance
	stopped time.Time                                // when watching stopped (zero: watching)
}

type overloadState struct {
	samples []dropSample // oldest first; samples[0] is at or before the window's start
	cur     defs.Overload
	since   time.Time // when the stream last went degraded
}

// dropSample is a stream's counters at one tick.
type dropSample struct {
	at               time.Time
	wanted, overflow int64
}

func newOverload(ratio float64, window time.Duration, log *slog.Logger) *overload {
	return &overload{ratio: ratio, window: window, log: log, streams: map[*pipeline.StreamStats]*overloadState{}}
}

// tick is the sampling period: a tenth of the window, between 100 ms and 1 s.
func (o *overload) tick() time.Duration {
	return min(max(o.window/10, 100*time.Millisecond), time.Second)
}

// run samples p's streams every tick until ctx ends.
func (o *overload) run(ctx context.Context, p *pipeline.Pipeline) {
	t := time.NewTicker(o.tick())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			o.mu.Lock()
			o.stopped = time.Now()
			o.mu.Unlock()
			return
		case now := <-t.C:
			o.sample(now, p.Streams())
		}
	}
}

// sample adds one sample per stream and updates their state.
func (o *overload) sample(now time.Time, sts []pipeline.StreamStatus) {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := make(map[*pipeline.StreamStats]bool, len(sts))
	for i := range sts {
		st := &sts[i]
		seen[st.Stats] = true
		s := o.streams[st.Stats]
		if s == nil {
			s = &overloadState{cur: defs.Overload{Window: o.window}}
			o.streams[st.Stats] = s
		}
		c := st.Stats.Counters()
		wanted := c.Decoded - c.Dropped[defs.DropInterval] - c.Dropped[defs.DropFPSCap]
		s.samples = append(s.samples, dropSample{at: now, wanted: wanted, overflow: c.Dropped[defs.DropQueueFull]})
		for len(s.samples) > 2 && !s.samples[1].at.After(now.Add(-o.window)) {
			s.samples = s.samples[1:]
		}
		base := s.samples[0]
		if now.Sub(base.at) < o.window-o.tick()/2 {
			continue // not a whole window yet
		}
		if dw := wanted - base.wanted; dw > 0 {
			s.cur.Ratio = float64(c.Dropped[defs.DropQueueFull]-base.overflow) / float64(dw)
		} else {
			s.cur.Ratio = 0
		}
		switch {
		case !s.cur.Degraded && s.cur.Ratio > o.ratio && !st.Ended && st.Err == nil:
			s.cur.Degraded, s.cur.Changes, s.since = true, s.cur.Changes+1, now
			o.log.Warn(fmt.Sprintf("stream degraded: %.0f%% of its frames dropped over %s, inference is behind the source (over %.0f%%)",
				100*s.cur.Ratio, o.window, 100*o.ratio), "stream", st.ID)
		case s.cur.Degraded && (s.cur.Ratio <= o.ratio/2 || st.Ended || st.Err != nil):
			s.cur.Degraded = false
			s.cur.DegradedFor += now.Sub(s.since)
			o.log.Info(fmt.Sprintf("stream running again: %.0f%% of its frames dropped over %s", 100*s.cur.Ratio, o.window),
				"stream", st.ID, "degraded_for", now.Sub(s.since).Round(time.Second).String())
		}
	}
	for k := range o.streams {
		if !seen[k] {
			delete(o.streams, k)
		}
	}
}

// get returns the overload of the stream with stats, nil before its first whole window.
func (o *overload) get(stats *pipeline.StreamStats) *defs.Overload {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.streams[stats]
	if s == nil || len(s.samples) < 2 {
		return nil
	}
	v := s.cur
	if v.Degraded {
		end := o.stopped
		if end.IsZero() {
			end = time.Now()
		}
		v.DegradedFor += end.Sub(s.since)
	}
	return &v
}
