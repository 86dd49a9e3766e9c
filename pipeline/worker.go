package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/tensor"
)

// modelRunner is one model's scheduler and inference worker.
type modelRunner struct {
	eng     Engine
	sched   *scheduler
	slotLen int // 3·H·W
	spec    preprocess.Spec
	// session serializes use of the engine's session buffers between this worker and cascades
	// that use this model as their secondary.
	session  sync.Mutex
	cascades []*cascadeRunner
	results  []*sink.Result
	frames   map[*sink.Result]*frame.Frame
	p        *Pipeline
	done     chan struct{}
	// FrameRunner path (device frames): the batch's frames and transforms, reused; bound is
	// set once the worker's thread was bound (FrameRunner.Bind).
	batchFrames []*frame.Frame
	batchTr     []preprocess.Transform
	bound       bool

	batches    atomic.Int64
	batchItems atomic.Int64
}

// run is the inference worker: it is locked to its OS thread for its whole life, because a GPU
// engine binds a CUDA context to the thread once and every call must come from it.
func (m *modelRunner) run(ctx context.Context) {
	defer close(m.done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	batch := make([]item, 0, m.sched.maxBatch)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		batch = m.sched.collect(ctx, batch, timer)
		if len(batch) == 0 {
			return
		}
		m.infer(batch)
		for i := range batch {
			batch[i] = item{}
		}
	}
}

func (m *modelRunner) infer(batch []item) {
	n := len(batch)
	r := m.eng.Acquire()
	if r == nil {
		for b := range batch {
			batch[b].st.stats.Dropped[DropInferError].Add(1)
			batch[b].st.recycle(batch[b])
		}
		return
	}
	defer r.Release()
	m.session.Lock()
	locked := true
	unlock := func() {
		if locked {
			m.session.Unlock()
			locked = false
		}
	}
	defer unlock()
	t0 := time.Now()
	var outs []tensor.Tensor
	var err error
	if fr, ok := r.(FrameRunner); ok {
		outs, err = m.runFrames(fr, batch)
	} else {
		outs, err = m.runSlots(r, batch)
	}
	m.batches.Add(1)
	m.batchItems.Add(int64(n))
	m.p.observeBatch(m.eng.Name(), n)
	if err != nil {
		m.p.log("model %s: inference of a batch of %d failed: %v", m.eng.Name(), n, err)
		for b := range batch {
			batch[b].st.stats.Dropped[DropInferError].Add(1)
			batch[b].st.recycle(batch[b])
		}
		return
	}
	now := time.Now()
	inferDur := now.Sub(t0)
	dec := r.Decoder()
	m.results = m.results[:0]
	for b := range batch {
		it := &batch[b]
		res := m.p.getResult()
		t1 := time.Now()
		res.Stream = it.st.cfg.ID
		res.Frame, res.PTS, res.Wallclock = it.index, it.pts, it.wallclock
		res.Width, res.Height = it.width, it.height
		res.Model = m.eng.Name()
		res.Detections = dec.Decode(outs, b, it.tr, res.Detections[:0])
		res.Decode, res.Preprocess, res.Inference, res.Postprocess = it.decodeDur, it.prepDur, inferDur, time.Since(t1)
		res.Batch = n
		res.Latency = now.Sub(it.decoded)
		res.QueueWait = t0.Sub(it.queued)
		res.ResetSecondary()
		m.results = append(m.results, res)
	}
	unlock()
	if len(m.cascades) > 0 {
		m.runCascades(batch)
	}
	for b := range batch {
		it := &batch[b]
		if it.frame != nil {
			it.frame.Release()
			it.frame = nil
		}
		it.st.stats.Inferred.Add(1)
		m.p.results <- resultMsg{r: m.results[b], st: it.st}
		it.st.done1()
	}
}

// runSlots copies the batch's preprocessed slots into the runner's input (returning each slot
// to its stream) and runs it.
func (m *modelRunner) runSlots(r Runner, batch []item) ([]tensor.Tensor, error) {
	n := len(batch)
	in, err := r.Input(n)
	if err != nil {
		return nil, err
	}
	if len(in) != n*m.slotLen {
		return nil, fmt.Errorf("input holds %d values, want %d: the model's input size changed", len(in), n*m.slotLen)
	}
	for b := range batch {
		it := &batch[b]
		copy(in[b*m.slotLen:(b+1)*m.slotLen], it.slot)
		it.st.slots <- it.slot
		it.slot = nil
	}
	return r.Run(n)
}

// runFrames hands the batch's frames to a FrameRunner, binding the worker's thread first if
// it has not been yet; the frames' transforms go into their items.
func (m *modelRunner) runFrames(fr FrameRunner, batch []item) ([]tensor.Tensor, error) {
	if !m.bound {
		if err := fr.Bind(); err != nil {
			return nil, err
		}
		m.bound = true
	}
	n := len(batch)
	if cap(m.batchFrames) < n { // once: batches never exceed the scheduler's maximum
		m.batchFrames = make([]*frame.Frame, max(n, m.sched.maxBatch))
		m.batchTr = make([]preprocess.Transform, max(n, m.sched.maxBatch))
	}
	frames, tr := m.batchFrames[:n], m.batchTr[:n]
	for b := range batch {
		frames[b] = batch[b].frame
	}
	outs, err := fr.RunFrames(frames, tr)
	clear(frames)
	if err != nil {
		return nil, err
	}
	for b := range batch {
		batch[b].tr = tr[b]
	}
	return outs, nil
}

// runCascades runs the secondary models on the crops of this batch's detections.
func (m *modelRunner) runCascades(batch []item) {
	if m.frames == nil {
		m.frames = map[*sink.Result]*frame.Frame{}
	}
	clear(m.frames)
	for b := range batch {
		if batch[b].frame != nil {
			m.frames[m.results[b]] = batch[b].frame
		}
	}
	for _, c := range m.cascades {
		for b := range batch {
			if f := batch[b].frame; f != nil {
				c.collect(m.results[b], f)
			}
		}
		if err := c.run(m.frames); err != nil {
			m.p.log("cascade %s → %s: %v", m.eng.Name(), c.Model, err)
		}
	}
}

type resultMsg struct {
	r  *sink.Result
	st *stream
	// end marks the stream's last message: no frame, the scene's closing events (tracks that
	// were still in a zone leave it).
	end bool
}
