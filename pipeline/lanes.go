package pipeline

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
)

// laneWorker is inference worker lane of a model's GPU frames (FrameRunner): it collects a
// batch from the model's scheduler, shared with the other lanes, submits it into a free slot of
// its lane without waiting, and collects the next one while the device runs it; a slot's batch
// is finished (its outputs decoded, its results sent, its frames released) just before the
// slot is filled again, or when no frame is waiting. So post-processing batch k overlaps the
// device's work on batch k+1.
type laneWorker struct {
	m     *modelRunner
	lane  int
	slots []laneSlot
	bound bool // FrameRunner.Bind ran on this goroutine
	// the batch's frames and transforms, reused
	frames []*frame.Frame
	tr     []preprocess.Transform
	// results of the slot being finished, for the device cascades
	results []*sink.Result
}

// laneSlot is one batch in flight.
type laneSlot struct {
	r     FrameRunner // the version it was submitted with, pinned; nil: free
	batch []item
	t0    time.Time // submitted
}

func newLaneWorker(m *modelRunner, lane, inflight int) *laneWorker {
	w := &laneWorker{m: m, lane: lane, slots: make([]laneSlot, max(1, inflight)),
		frames: make([]*frame.Frame, m.sched.maxBatch), tr: make([]preprocess.Transform, m.sched.maxBatch)}
	for k := range w.slots {
		w.slots[k].batch = make([]item, 0, m.sched.maxBatch)
	}
	return w
}

// startLanes runs the model's lane workers; m.done closes when they all ended.
func (m *modelRunner) startLanes(ctx context.Context, lanes, inflight int) {
	var wg sync.WaitGroup
	for i := range lanes {
		w := newLaneWorker(m, i, inflight)
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(ctx)
		}()
	}
	go func() {
		wg.Wait()
		close(m.done)
	}()
}

func (w *laneWorker) run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	idle := w.finishAll
	for k := 0; ; k = (k + 1) % len(w.slots) {
		s := &w.slots[k]
		w.finish(k)
		s.batch = w.m.sched.collectIdle(ctx, s.batch, timer, idle)
		if len(s.batch) == 0 {
			w.finishAll()
			return
		}
		w.submit(k)
	}
}

// submit pins the serving version and queues slot k's batch on it.
func (w *laneWorker) submit(k int) {
	s := &w.slots[k]
	m := w.m
	n := len(s.batch)
	r, err := w.acquire(k)
	if err != nil {
		m.p.log("model %s: batch of %d: %v", m.eng.Name(), n, err)
		m.drop(s.batch)
		clear(s.batch)
		s.batch = s.batch[:0]
		return
	}
	frames, tr := w.frames[:n], w.tr[:n]
	for b := range s.batch {
		frames[b] = s.batch[b].frame
	}
	s.t0 = time.Now()
	err = r.Submit(w.lane, k, frames, tr)
	clear(frames)
	m.batches.Add(1)
	m.batchItems.Add(int64(n))
	m.p.observeBatch(m.eng.Name(), n)
	if err != nil {
		r.Release()
		m.p.log("model %s: inference of a batch of %d failed: %v", m.eng.Name(), n, err)
		m.drop(s.batch)
		clear(s.batch)
		s.batch = s.batch[:0]
		return
	}
	for b := range s.batch {
		s.batch[b].tr = tr[b]
	}
	s.r = r
}

// acquire pins the serving version for slot k of this lane, binding the goroutine first.
func (w *laneWorker) acquire(k int) (FrameRunner, error) {
	r := w.m.eng.Acquire()
	if r == nil {
		return nil, fmt.Errorf("model closed")
	}
	fr, ok := r.(FrameRunner)
	var err error
	switch {
	case !ok:
		err = fmt.Errorf("its runner does not take frames (FrameRunner)")
	case w.lane >= fr.Lanes() || k >= fr.InFlight():
		err = fmt.Errorf("lane %d slot %d outside the version's %d lanes of %d slots", w.lane, k, fr.Lanes(), fr.InFlight())
	case !w.bound:
		if err = fr.Bind(); err == nil {
			w.bound = true
		}
	}
	if err != nil {
		r.Release()
		return nil, err
	}
	return fr, nil
}

// finish waits for slot k's batch (if one is in flight), decodes its outputs and sends its
// results, then releases its frames and version.
func (w *laneWorker) finish(k int) {
	s := &w.slots[k]
	if s.r == nil {
		return
	}
	m := w.m
	r := s.r
	s.r = nil
	outs, err := r.Wait(w.lane, k)
	now := time.Now()
	if err != nil {
		m.p.log("model %s: inference of a batch of %d failed: %v", m.eng.Name(), len(s.batch), err)
		m.drop(s.batch)
	} else {
		dec := r.LaneDecoder(w.lane)
		n := len(s.batch)
		w.results = w.results[:0]
		for b := range s.batch {
			w.results = append(w.results, m.result(dec, outs, b, &s.batch[b], n, s.t0, now))
		}
		if len(m.devCascades) > 0 {
			w.runCascades(s.batch)
		}
		for b := range s.batch {
			it := &s.batch[b]
			it.frame.Release()
			it.frame = nil
			it.st.stats.Inferred.Add(1)
			m.p.results <- resultMsg{r: w.results[b], st: it.st, seq: it.seq}
			it.st.done1()
		}
		clear(w.results)
	}
	r.Release()
	clear(s.batch)
	s.batch = s.batch[:0]
}

// finishAll finishes every batch in flight.
func (w *laneWorker) finishAll() {
	for k := range w.slots {
		w.finish(k)
	}
}

// runCascades runs the model's device cascades on a finished batch, its frames still held.
func (w *laneWorker) runCascades(batch []item) {
	frames := w.frames[:len(batch)]
	for b := range batch {
		frames[b] = batch[b].frame
	}
	for _, c := range w.m.devCascades {
		if err := c.run(frames, w.results); err != nil {
			w.m.p.log("cascade %s → %s: %v", w.m.eng.Name(), c.Model, err)
		}
	}
	clear(frames)
}
