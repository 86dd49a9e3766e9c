package pipeline

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/tensor"
)

// modelRunner is one model's scheduler and its inference workers: one for host frames (run),
// FrameRunner.Lanes() for the frames of a GPU (laneWorker).
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
	done     chan struct{} // closed when every worker of the model has ended

	batches    atomic.Int64
	batchItems atomic.Int64
}

// run is the inference worker of host frames.
func (m *modelRunner) run(ctx context.Context) {
	defer close(m.done)
	// One OS thread for the worker's life: ONNX Runtime computes on the calling thread (all of
	// it with intra_op_threads 1) and keeps per-thread state warm (docs/benchmarks.md).
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
		m.drop(batch)
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
	outs, err := m.runSlots(r, batch)
	m.batches.Add(1)
	m.batchItems.Add(int64(n))
	m.p.observeBatch(m.eng.Name(), n)
	if err != nil {
		m.p.log("model %s: inference of a batch of %d failed: %v", m.eng.Name(), n, err)
		m.drop(batch)
		return
	}
	now := time.Now()
	dec := r.Decoder()
	m.results = m.results[:0]
	for b := range batch {
		m.results = append(m.results, m.result(dec, outs, b, &batch[b], n, t0, now))
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
		m.p.results <- resultMsg{r: m.results[b], st: it.st, seq: it.seq}
		it.st.done1()
	}
}

// result decodes item b of a batch of n whose inference ran from t0 to now.
func (m *modelRunner) result(dec detect.Decoder, outs []tensor.Tensor, b int, it *item, n int, t0, now time.Time) *sink.Result {
	res := m.p.getResult()
	t1 := time.Now()
	res.Stream = it.st.cfg.ID
	res.Frame, res.PTS, res.Wallclock = it.index, it.pts, it.wallclock
	res.Width, res.Height = it.width, it.height
	res.Model = m.eng.Name()
	res.Detections = dec.Decode(outs, b, it.tr, res.Detections[:0])
	res.Decode, res.Preprocess, res.Inference, res.Postprocess = it.decodeDur, it.prepDur, now.Sub(t0), time.Since(t1)
	res.Batch = n
	res.Latency = now.Sub(it.decoded)
	res.QueueWait = t0.Sub(it.queued)
	res.ResetSecondary()
	return res
}

// drop gives up a batch whose inference failed (or whose model closed): each item is counted,
// recycled and leaves a gap in its stream's results that the output stage skips.
func (m *modelRunner) drop(batch []item) {
	for b := range batch {
		it := batch[b]
		it.st.stats.Dropped[DropInferError].Add(1)
		m.p.results <- resultMsg{st: it.st, seq: it.seq}
		it.st.recycle(it)
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

// resultMsg is one item's result on its way to the sinks; r is nil for an item that gave none
// (its inference failed), which its stream's result order skips.
type resultMsg struct {
	r   *sink.Result
	st  *stream
	seq uint64
	// end marks the stream's last message: no frame, the scene's closing events (tracks that
	// were still in a zone leave it).
	end bool
}
