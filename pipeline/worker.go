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
	// devCascades are the cascades of a model of GPU frames (devcascade.go).
	devCascades []*devCascade
	results     []*sink.Result
	frames      map[*sink.Result]*frame.Frame
	p           *Pipeline
	done        chan struct{} // closed when every worker of the model has ended

	batches    atomic.Int64
	batchItems atomic.Int64

	// host frames: the stage's preprocessing helpers
	prepJobs chan prepJob
	prepWG   sync.WaitGroup
}

// stagedBatch is a batch of host frames on its way through the worker: preprocessed into input
// set set of the pinned version r, then run.
type stagedBatch struct {
	set   int
	r     Runner
	batch []item
}

// run is the inference worker of host frames, in two stages: stage, on a goroutine of its own,
// collects the next batch and preprocesses its frames straight into a free input set of the
// model while this goroutine, locked to its OS thread, runs the batch before it and routes its
// results. So preprocessing batch k+1 overlaps inference of batch k, no frame is copied between
// the two, and only the frames of two batches are ever preprocessed (the queues hold decoded
// frames: 0.5 MB each at 768×432 I420 against 2 MB for a float32 input of 416×416).
func (m *modelRunner) run(ctx context.Context) {
	defer close(m.done)
	free := make(chan *stagedBatch, 2)
	for set := 1; set <= 2; set++ { // input set 0 is the cascades'
		free <- &stagedBatch{set: set, batch: make([]item, 0, m.sched.maxBatch)}
	}
	staged := make(chan *stagedBatch)
	helpers := min(m.sched.maxBatch, runtime.GOMAXPROCS(0)) - 1
	m.prepJobs = make(chan prepJob)
	for range helpers {
		go m.prepHelper()
	}
	defer close(m.prepJobs)
	go m.stage(ctx, free, staged, helpers)
	// One OS thread for the worker's life: ONNX Runtime computes on the calling thread (all of
	// it with intra_op_threads 1) and keeps per-thread state warm (docs/benchmarks.md).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for sb := range staged {
		m.infer(sb)
		free <- sb
	}
}

// stage collects batches and prepares them into free input sets until ctx ends (a partial batch
// collected then is still run) and closes staged.
func (m *modelRunner) stage(ctx context.Context, free, staged chan *stagedBatch, helpers int) {
	defer close(staged)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		sb := <-free // the worker returns every batch it receives and receives until staged closes
		sb.batch = m.sched.collect(ctx, sb.batch, timer)
		if len(sb.batch) == 0 {
			return
		}
		if m.prepareBatch(sb, helpers) {
			staged <- sb
		} else {
			free <- sb
		}
	}
}

// prepareBatch pins the serving version and preprocesses sb's frames into its input set, over
// helpers+1 goroutines. A batch that cannot run is dropped (false).
func (m *modelRunner) prepareBatch(sb *stagedBatch, helpers int) bool {
	n := len(sb.batch)
	fail := func(err error) bool {
		if err != nil {
			m.p.log("model %s: batch of %d: %v", m.eng.Name(), n, err)
		}
		m.drop(sb.batch)
		clear(sb.batch)
		sb.batch = sb.batch[:0]
		return false
	}
	r := m.eng.Acquire()
	if r == nil {
		return fail(nil) // closed: the pipeline is stopping
	}
	in, err := r.InputSet(sb.set, n)
	if err == nil && len(in) != n*m.slotLen {
		err = fmt.Errorf("input holds %d values, want %d: the model's input size changed", len(in), n*m.slotLen)
	}
	if err != nil {
		r.Release()
		return fail(err)
	}
	sb.r = r
	parts := min(n, helpers+1)
	per := (n + parts - 1) / parts
	for lo := per; lo < n; lo += per {
		m.prepWG.Add(1)
		m.prepJobs <- prepJob{batch: sb.batch, in: in, lo: lo, hi: min(lo+per, n)}
	}
	m.prepItems(sb.batch, in, 0, min(per, n))
	m.prepWG.Wait()
	return true
}

// prepJob is items [lo, hi) of a batch to preprocess into in.
type prepJob struct {
	batch  []item
	in     []float32
	lo, hi int
}

func (m *modelRunner) prepHelper() {
	for j := range m.prepJobs {
		m.prepItems(j.batch, j.in, j.lo, j.hi)
		m.prepWG.Done()
	}
}

// prepItems preprocesses items [lo, hi) of batch into their slots of in. An item that fails is
// marked (its slot zeroed) and dropped after the run.
func (m *modelRunner) prepItems(batch []item, in []float32, lo, hi int) {
	for b := lo; b < hi; b++ {
		it := &batch[b]
		slot := in[b*m.slotLen : (b+1)*m.slotLen]
		if err := it.st.prepare(it, slot); err != nil {
			it.failed = true
			clear(slot)
			m.p.debugf("model %s: %v", m.eng.Name(), err)
		}
	}
}

// infer runs a staged batch, decodes its outputs and sends its results; then the batch is
// empty and its version released.
func (m *modelRunner) infer(sb *stagedBatch) {
	batch, r := sb.batch, sb.r
	defer func() {
		r.Release()
		clear(sb.batch)
		sb.batch, sb.r = sb.batch[:0], nil
	}()
	n := len(batch)
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
	outs, err := r.RunSet(sb.set, n)
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
		var res *sink.Result
		if !batch[b].failed {
			res = m.result(dec, outs, b, &batch[b], n, t0, now)
		}
		m.results = append(m.results, res)
	}
	unlock()
	if len(m.cascades) > 0 {
		m.runCascades(batch)
	}
	for b := range batch {
		it := &batch[b]
		if it.failed {
			it.st.stats.Dropped[DropInferError].Add(1)
			m.p.results <- resultMsg{st: it.st, seq: it.seq}
			it.st.recycle(*it)
			continue
		}
		it.frame.Release()
		it.frame = nil
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
	if it.cropX != 0 || it.cropY != 0 {
		cropBox(res.Detections, it.cropX, it.cropY)
	}
	res.Detections = it.st.rules.Apply(res.Detections, it.width, it.height)
	res.Decode, res.Preprocess, res.Inference, res.Postprocess = it.decodeDur, it.prepDur, now.Sub(t0), time.Since(t1)
	res.Batch = n
	res.Latency = now.Sub(it.decoded)
	if !it.wake.IsZero() && it.st.gate != nil {
		it.st.gate.WokeResult(now.Sub(it.wake))
	}
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

// runCascades runs the secondary models on the crops of this batch's detections.
func (m *modelRunner) runCascades(batch []item) {
	if m.frames == nil {
		m.frames = map[*sink.Result]*frame.Frame{}
	}
	clear(m.frames)
	for b := range batch {
		if batch[b].frame != nil && m.results[b] != nil {
			m.frames[m.results[b]] = batch[b].frame
		}
	}
	for _, c := range m.cascades {
		for b := range batch {
			if f := batch[b].frame; f != nil && m.results[b] != nil {
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
