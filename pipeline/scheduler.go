package pipeline

import (
	"context"
	"sync"
	"time"
)

// scheduler batches one model's frames across all streams using it: it waits for a first frame,
// then collects more, round-robin over the stream queues so no stream starves (live streams
// before unpaced files: sweep), until the batch
// holds maxBatch frames or maxDelay has passed since the first one. Several workers may collect
// from one scheduler (GPU lanes); a worker that fills its batch and leaves frames behind wakes
// the next.
type scheduler struct {
	maxBatch int
	maxDelay time.Duration
	ready    chan struct{}

	mu     sync.Mutex
	queues []*queue
	next   int // round-robin start
}

func newScheduler(maxBatch int, maxDelay time.Duration) *scheduler {
	if maxBatch < 1 {
		maxBatch = 1
	}
	return &scheduler{maxBatch: maxBatch, maxDelay: maxDelay, ready: make(chan struct{}, 1)}
}

func (s *scheduler) add(q *queue) {
	s.mu.Lock()
	s.queues = append(s.queues, q)
	s.mu.Unlock()
}

func (s *scheduler) remove(q *queue) {
	s.mu.Lock()
	for i, x := range s.queues {
		if x == q {
			s.queues = append(s.queues[:i], s.queues[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
}

// sweep takes at most one item from each queue, round-robin, until dst is full or a full round
// found nothing: first from the queues of live streams, then from the background ones
// (unpaced files), so when inference is short live streams keep their frames and files, which
// wait rather than lose any, take what is left. Taking one per queue per round keeps streams
// of a class fair within a batch.
func (s *scheduler) sweep(dst []item) []item {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.queues)
	for _, background := range [2]bool{false, true} {
		for progress := true; progress && len(dst) < s.maxBatch; {
			progress = false
			for i := 0; i < n && len(dst) < s.maxBatch; i++ {
				q := s.queues[(s.next+i)%n]
				if q.background != background {
					continue
				}
				before := len(dst)
				dst = q.pop(dst, 1)
				progress = progress || len(dst) > before
			}
		}
	}
	if n > 0 {
		s.next = (s.next + 1) % n
	}
	if len(dst) >= s.maxBatch {
		for _, q := range s.queues {
			if q.len() > 0 {
				signal(s.ready) // for another worker
				break
			}
		}
	}
	return dst
}

// collect returns the next batch (1…maxBatch items) appended to dst[:0]. It returns nil when ctx
// ends before a first item arrived; a partial batch already collected when ctx ends is returned
// (the worker infers it: nothing taken from a queue is lost). timer is the caller's reusable
// timer.
func (s *scheduler) collect(ctx context.Context, dst []item, timer *time.Timer) []item {
	return s.collectIdle(ctx, dst, timer, nil)
}

// collectIdle is collect calling idle (when not nil) once, before it first waits for a first
// item: a GPU worker finishes its batches in flight there rather than sit on their results.
func (s *scheduler) collectIdle(ctx context.Context, dst []item, timer *time.Timer, idle func()) []item {
	dst = dst[:0]
	for len(dst) == 0 {
		dst = s.sweep(dst)
		if len(dst) > 0 {
			break
		}
		if idle != nil {
			idle()
			idle = nil
			continue // sweep again: frames may have come meanwhile
		}
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil
		}
	}
	if len(dst) >= s.maxBatch || s.maxDelay <= 0 {
		return dst
	}
	timer.Reset(s.maxDelay)
	defer timer.Stop()
	for len(dst) < s.maxBatch {
		if dst = s.sweep(dst); len(dst) >= s.maxBatch {
			break
		}
		select {
		case <-s.ready:
		case <-timer.C:
			return s.sweep(dst)
		case <-ctx.Done():
			return dst
		}
	}
	return dst
}
