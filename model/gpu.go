package model

import (
	"errors"
	"fmt"
	"maps"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/preprocess/gpu"
	"github.com/vinfer/vinfer/tensor"
)

// Defaults of config.Model.Workers and InFlight on a GPU: the best of 1×2, 2×2, 2×3 and 4×2
// measured end to end on the H200 (docs/benchmarks-gpu.md).
const (
	DefaultGPUWorkers  = 2
	DefaultGPUInFlight = 2
)

// ErrForeignFence is returned by Submit for a frame whose Ready fence is not a *cuda.Event.
var ErrForeignFence = errors.New("model: frame's ready fence is not a CUDA event")

// gpuEngine runs one model version on one GPU in lanes, one per inference worker: each lane
// has its own CUDA stream, ONNX Runtime session on that stream and InFlight input sets. A
// batch goes to one set: the fused preprocessing kernel writes each frame into a slot of the
// set's device input [MaxBatch,3,H,W] float32, ONNX Runtime's CUDA provider runs on it through
// IO binding into the set's device outputs (queued without a host wait and replayed as a CUDA
// graph when graph is set), the outputs of the batch's frames are copied to the set's pinned
// host memory, and an event marks the end. Everything is allocated at load; a batch allocates
// nothing.
type gpuEngine struct {
	dev      *cuda.Device
	maxBatch int
	graph    bool
	lanes    []*gpuLane
}

// gpuLane is one worker's share of a gpuEngine. Everything it does with CUDA and ONNX Runtime
// runs on its own OS thread (serve), from load to close: ONNX Runtime's CUDA provider keeps
// captured CUDA graphs per thread, so the thread that warmed a session up (capturing its
// graphs) must be the one that replays them. The pipeline's worker hands it requests (op)
// and waits for each.
type gpuLane struct {
	m      *Model // its session, on stream
	stream *cuda.Stream
	pre    gpu.Preprocessor
	dec    detect.Decoder
	sets   []gpuSet
	ops    chan *laneOp
	done   chan error    // one per op
	exited chan struct{} // serve returned, the lane's resources freed
	op     laneOp        // the request in flight (one caller per lane)
}

// laneOp is a request to a lane's thread: queue a batch into a set, or wait for a set.
type laneOp struct {
	wait   bool
	slot   int
	frames []*frame.Frame
	tr     []preprocess.Transform
}

// gpuSet is one batch in flight.
type gpuSet struct {
	input   *cuda.Buffer       // [maxBatch,3,H,W] float32
	outs    []*cuda.Buffer     // output i, room for maxBatch items
	host    []*cuda.HostBuffer // pinned copies of the outputs
	hostF   [][]float32        // host[i] as float32 values
	batched []bool             // output i has the batch as dim 0
	views   []tensor.Tensor    // what Wait returns: views of hostF
	run     *infer.DeviceRun
	done    *cuda.Event
	n       int // frames of the batch submitted last
}

// openGPU loads decl on GPU ordinal in its lanes (decl.Workers, decl.InFlight sets each) and
// warms each up at the one batch shape it runs; a model whose CUDA graph cannot be captured is
// loaded again without graphs. The returned model is lane 0's, for the version's description;
// close frees it with the engine.
func (l *Loader) openGPU(decl config.Model, ordinal int) (*Model, *gpuEngine, error) {
	if decl.Provider != config.ProviderCUDA {
		return nil, nil, fmt.Errorf("model %s: provider %q: GPU frames need provider: cuda", decl.Name, decl.Provider)
	}
	graph := decl.CUDAGraph == nil || *decl.CUDAGraph
	e, err := l.openLanes(decl, ordinal, graph)
	if err != nil && graph && errors.Is(err, errWarmUp) {
		l.logf("model %s on cuda:%d: running without CUDA graphs: %v", decl.Name, ordinal, err)
		e, err = l.openLanes(decl, ordinal, false)
	}
	if err != nil {
		return nil, nil, err
	}
	return e.lanes[0].m, e, nil
}

// errWarmUp marks a failure of the warm-up runs (where a CUDA graph is captured).
var errWarmUp = errors.New("warm-up")

func (l *Loader) logf(format string, args ...any) {
	if l.Logf != nil {
		l.Logf(format, args...)
	}
}

func (l *Loader) openLanes(decl config.Model, ordinal int, graph bool) (*gpuEngine, error) {
	dev, err := cuda.Open(ordinal)
	if err != nil {
		return nil, fmt.Errorf("model %s: GPU %d: %w", decl.Name, ordinal, err)
	}
	e := &gpuEngine{dev: dev, graph: graph}
	if graph {
		decl.ProviderOptions = maps.Clone(decl.ProviderOptions)
		if decl.ProviderOptions == nil {
			decl.ProviderOptions = map[string]string{}
		}
		decl.ProviderOptions["enable_cuda_graph"] = "1"
	}
	workers, inflight := decl.Workers, decl.InFlight
	if workers <= 0 {
		workers = DefaultGPUWorkers
	}
	if inflight <= 0 {
		inflight = DefaultGPUInFlight
	}
	for range workers {
		ln := &gpuLane{ops: make(chan *laneOp), done: make(chan error), exited: make(chan struct{})}
		ready := make(chan error)
		go e.serve(ln, ready, l, decl, ordinal, inflight)
		if err := <-ready; err != nil {
			<-ln.exited
			e.close(nil)
			return nil, err
		}
		e.lanes = append(e.lanes, ln)
	}
	return e, nil
}

// serve is a lane's thread: it loads the lane (reporting to ready), runs its requests until
// ops is closed, and frees it.
func (e *gpuEngine) serve(ln *gpuLane, ready chan<- error, l *Loader, decl config.Model, ordinal, inflight int) {
	defer close(ln.exited)
	err := e.dev.RunLocked(func() error {
		defer e.freeLane(ln)
		if err := e.addLane(ln, l, decl, ordinal, inflight); err != nil {
			return err
		}
		ready <- nil
		for op := range ln.ops {
			set := &ln.sets[op.slot]
			var err error
			if op.wait {
				err = set.done.Synchronize()
			} else if err = e.queue(ln, set, op.frames, op.tr); err != nil {
				// The frames may be released once Submit returns: let queued work that reads them end.
				err = errors.Join(err, ln.stream.Synchronize())
			}
			ln.done <- err
		}
		return nil
	})
	if err != nil {
		ready <- err
	}
}

// addLane loads one lane on its thread: its stream, session, preprocessor, decoder and input
// sets, warmed up.
func (e *gpuEngine) addLane(ln *gpuLane, l *Loader, decl config.Model, ordinal, inflight int) error {
	var err error
	if ln.stream, err = e.dev.NewStream(); err != nil {
		return fmt.Errorf("model %s on cuda:%d: %w", decl.Name, ordinal, err)
	}
	if ln.m, err = l.load(decl, &onDevice{ordinal: ordinal, stream: ln.stream}); err != nil {
		return err // names the model already
	}
	if err := e.initLane(ln, inflight); err != nil {
		return fmt.Errorf("model %s on cuda:%d: %w", decl.Name, ordinal, err)
	}
	return nil
}

// initLane allocates the lane's buffers for its session and warms it up.
func (e *gpuEngine) initLane(ln *gpuLane, inflight int) error {
	sess := ln.m.Session()
	if e.maxBatch == 0 {
		e.maxBatch = sess.MaxBatch()
	}
	var err error
	if ln.dec, err = ln.m.NewDecoder(); err != nil {
		return err
	}
	ln.pre = gpu.Preprocessor{Device: e.dev, Spec: ln.m.Pre}
	if err := ln.pre.Init(); err != nil {
		return err
	}
	ln.sets = make([]gpuSet, inflight)
	for k := range ln.sets {
		if err := e.initSet(ln, &ln.sets[k], k); err != nil {
			return err
		}
	}
	// Warm-up, off the frame path: ONNX Runtime plans memory, picks convolution algorithms and
	// captures each set's CUDA graph at the first runs of a shape. Every batch runs at the full
	// shape (the CUDA EP plugin hung when batch shapes varied: docs/benchmarks-gpu.md), so that
	// is the only one warmed.
	for k := range ln.sets {
		if err := ln.stream.Fill32(ln.sets[k].input.Ptr, 0, ln.sets[k].input.Size/4); err != nil {
			return err
		}
	}
	for range 3 {
		for k := range ln.sets {
			if err := e.infer(ln, &ln.sets[k]); err != nil {
				return fmt.Errorf("%w inference of a batch of %d: %w", errWarmUp, e.maxBatch, err)
			}
		}
	}
	if err := ln.stream.Synchronize(); err != nil {
		return fmt.Errorf("%w: %w", errWarmUp, err)
	}
	return nil
}

// initSet allocates input set k of a lane: input, outputs, pinned copies, the bound run (with
// its own CUDA graph id) and the end event.
func (e *gpuEngine) initSet(ln *gpuLane, set *gpuSet, k int) error {
	sess := ln.m.Session()
	var err error
	if set.input, err = e.dev.Alloc(e.maxBatch * ln.pre.SlotBytes()); err != nil {
		return err
	}
	if set.done, err = e.dev.NewEvent(false); err != nil {
		return err
	}
	var ptrs []cuda.Ptr
	for _, o := range sess.Outputs() {
		per, batched, err := outputLayout(o.Shape, sess.ModelBatch() < 0)
		if err != nil {
			return fmt.Errorf("output %q: %w", o.Name, err)
		}
		n := per
		if batched {
			n *= e.maxBatch
		}
		b, err := e.dev.Alloc(4 * n)
		if err != nil {
			return err
		}
		set.outs = append(set.outs, b)
		h, err := e.dev.AllocHost(4 * n)
		if err != nil {
			return err
		}
		set.host, set.hostF = append(set.host, h), append(set.hostF, h.Float32s())
		set.batched = append(set.batched, batched)
		set.views = append(set.views, tensor.Tensor{Info: tensor.Info{Name: o.Name, Type: o.Type, Shape: append([]int64(nil), o.Shape...)}})
		ptrs = append(ptrs, b.Ptr)
	}
	if set.run, err = sess.NewDeviceRun(e.dev.Ordinal(), set.input.Ptr, ptrs); err != nil {
		return err
	}
	if e.graph {
		return set.run.UseGraph(k + 1) // a graph replays fixed addresses: one per set
	}
	return nil
}

// infer queues the model on set's input at the full batch shape (slots past the batch's frames
// hold stale data whose results are not copied): without a host wait when replaying a CUDA
// graph; else ONNX Runtime waits for its stream (queued runs without a graph abort in the
// CUDA EP plugin: docs/benchmarks-gpu.md).
func (e *gpuEngine) infer(ln *gpuLane, set *gpuSet) error {
	if e.graph {
		return set.run.Queue(e.maxBatch)
	}
	return set.run.Run(e.maxBatch)
}

// outputLayout returns the float32 values of an output per batch item (batched) or in all
// (fixed). Dimensions other than a dynamic batch must be known: the device buffers are
// allocated once.
func outputLayout(shape []int64, dynamicBatch bool) (perItem int, batched bool, err error) {
	if n := tensor.Elements(shape); n > 0 {
		return int(n), false, nil
	}
	if dynamicBatch && len(shape) > 0 && shape[0] < 0 {
		if n := tensor.Elements(shape[1:]); n > 0 {
			return int(n), true, nil
		}
	}
	return 0, false, fmt.Errorf("shape %v depends on the data; the GPU path needs outputs of a known size", shape)
}

// submit is DeviceVersion.Submit.
func (e *gpuEngine) submit(lane, slot int, frames []*frame.Frame, tr []preprocess.Transform) error {
	ln, set, err := e.set(lane, slot)
	if err != nil {
		return err
	}
	n := len(frames)
	if n < 1 || n > e.maxBatch || len(tr) < n {
		return fmt.Errorf("model on cuda:%d: batch of %d frames (%d transforms) outside 1…%d", e.dev.Ordinal(), n, len(tr), e.maxBatch)
	}
	ln.op = laneOp{slot: slot, frames: frames, tr: tr}
	ln.ops <- &ln.op
	err = <-ln.done
	ln.op = laneOp{}
	if err != nil {
		return err
	}
	set.n = n
	return nil
}

func (e *gpuEngine) queue(ln *gpuLane, set *gpuSet, frames []*frame.Frame, tr []preprocess.Transform) error {
	for i, f := range frames {
		if f.Ready != nil {
			ev, ok := f.Ready.(*cuda.Event)
			if !ok {
				return fmt.Errorf("frame %d: %w (%T)", f.Index, ErrForeignFence, f.Ready)
			}
			if err := ln.stream.Wait(ev); err != nil {
				return err
			}
		}
		t, err := ln.pre.Run(ln.stream, f, set.input.Ptr, i)
		if err != nil {
			return fmt.Errorf("preprocessing frame %d: %w", f.Index, err)
		}
		tr[i] = t
	}
	if err := e.infer(ln, set); err != nil {
		return err
	}
	for i, o := range set.outs {
		if err := ln.stream.CopyDtoH(set.host[i], o.Ptr, set.run.OutputBytes(i, len(frames))); err != nil {
			return err
		}
	}
	return set.done.Record(ln.stream)
}

// wait is DeviceVersion.Wait.
func (e *gpuEngine) wait(lane, slot int) ([]tensor.Tensor, error) {
	ln, set, err := e.set(lane, slot)
	if err != nil {
		return nil, err
	}
	ln.op = laneOp{wait: true, slot: slot}
	ln.ops <- &ln.op
	if err := <-ln.done; err != nil {
		return nil, err
	}
	for i := range set.views {
		if set.batched[i] {
			set.views[i].Shape[0] = int64(set.n)
		}
		set.views[i].Data = set.hostF[i][:set.run.OutputBytes(i, set.n)/4]
	}
	return set.views, nil
}

func (e *gpuEngine) set(lane, slot int) (*gpuLane, *gpuSet, error) {
	if lane < 0 || lane >= len(e.lanes) || slot < 0 || slot >= len(e.lanes[lane].sets) {
		return nil, nil, fmt.Errorf("model on cuda:%d: lane %d slot %d outside %d lanes of %d", e.dev.Ordinal(), lane, slot, len(e.lanes), len(e.lanes[0].sets))
	}
	ln := e.lanes[lane]
	return ln, &ln.sets[slot], nil
}

// close ends the lanes' threads, which free everything they hold, the lanes' sessions (lane
// 0's is m, the version's model) included, after the last batch (its worker waited for it).
func (e *gpuEngine) close(_ *Model) error {
	for _, ln := range e.lanes {
		close(ln.ops)
		<-ln.exited
	}
	e.lanes = nil
	return e.dev.Close()
}

// freeLane frees what a lane holds, in dependency order, on its thread.
func (e *gpuEngine) freeLane(ln *gpuLane) {
	if ln.stream != nil {
		ln.stream.Synchronize()
	}
	for k := range ln.sets {
		set := &ln.sets[k]
		if set.run != nil {
			set.run.Release() // the IO binding before its session
		}
		if set.input != nil {
			set.input.Free(nil)
		}
		for i := range set.outs {
			set.outs[i].Free(nil)
		}
		for i := range set.host {
			set.host[i].Free()
		}
		if set.done != nil {
			set.done.Destroy()
		}
	}
	if ln.m != nil {
		ln.m.Close()
	}
	ln.pre.Close()
	if ln.stream != nil {
		ln.stream.Destroy()
	}
}

// DeviceVersion is a Version loaded on a GPU (Registry.GetDevice). It takes decoded frames in
// that GPU's memory (codec.NVDECStream's) and preprocesses them itself: it implements
// pipeline.FrameRunner, with one lane per worker (config.Model.Workers) and InFlight batches
// per lane. Its Input and Run are the host-memory path of lane 0's session (ONNX Runtime
// copies), which the pipeline does not use for it.
type DeviceVersion struct{ *Version }

// OnDevice returns v as a DeviceVersion when it runs on a GPU; ok is false for a host version.
func (v *Version) OnDevice() (d DeviceVersion, ok bool) {
	return DeviceVersion{v}, v.gpu != nil
}

// Device is the GPU ordinal.
func (d DeviceVersion) Device() int { return d.gpu.dev.Ordinal() }

// Lanes is how many workers run the version at once.
func (d DeviceVersion) Lanes() int { return len(d.gpu.lanes) }

// InFlight is how many batches one lane keeps queued.
func (d DeviceVersion) InFlight() int { return len(d.gpu.lanes[0].sets) }

// CUDAGraph reports whether batches replay CUDA graphs (queued without a host wait).
func (d DeviceVersion) CUDAGraph() bool { return d.gpu.graph }

// Bind makes the GPU's context current on the calling OS thread and locks the calling
// goroutine to it for its life (cuda.Device.Bind): a worker calls it once, before its first
// Submit. The lanes run on threads of their own; the worker's thread releases the frames
// (NVDEC surfaces) after each batch.
func (d DeviceVersion) Bind() error { return d.gpu.dev.Bind() }

// Submit queues a batch of NV12 frames in the GPU's memory on slot of lane: frame b goes to
// item b of the slot's device input (after the frame's ready event), the model runs at the
// full MaxBatch shape, the outputs of the len(frames) items are copied to the slot's pinned
// host memory, and an event marks the end; it returns without waiting for the device. tr[b]
// receives frame b's model-input→frame mapping. The frames must stay held until Wait(lane,
// slot); after an error they may be released at once. Call it from the bound worker thread.
// Errors: a batch larger than MaxBatch, a lane or slot out of range, a host or non-NV12 frame
// (preprocess/gpu's errors), ErrForeignFence, the driver's or ONNX Runtime's.
func (d DeviceVersion) Submit(lane, slot int, frames []*frame.Frame, tr []preprocess.Transform) error {
	return d.gpu.submit(lane, slot, frames, tr)
}

// Wait blocks until slot's batch is done and returns its outputs ([n,…] float32 in host
// memory, n the frames submitted), valid until the slot's next Submit.
func (d DeviceVersion) Wait(lane, slot int) ([]tensor.Tensor, error) { return d.gpu.wait(lane, slot) }

// LaneDecoder is lane's post-processor.
func (d DeviceVersion) LaneDecoder(lane int) detect.Decoder { return d.gpu.lanes[lane].dec }
