// Package gpuexec owns the execution of a model on a GPU: an Engine runs one loaded model
// version on one device in lanes, one per inference worker, each lane on an OS thread of its own
// (bound to the device's context through cuda.Device.RunLocked) with its own CUDA stream, ONNX
// Runtime session on that stream and input sets for the batches in flight, replayed as CUDA
// graphs where the model allows. What a model is, how it is loaded, cached and reloaded is
// package model's (which opens engines through Open); which GPU a stream uses and its NVDEC
// decoder are cuda's (Devices) and codec's (NVDECStream); the pipeline's lane workers drive an
// Engine through model.DeviceVersion.
package gpuexec

import (
	"errors"
	"fmt"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/preprocess/gpu"
	"github.com/vinfer/vinfer/tensor"
)

// Defaults of Options.Workers and InFlight (config.Model's workers and inflight): the best of
// 1×2, 2×2, 2×3 and 4×2 measured end to end on the H200 (docs/benchmarks-gpu.md).
const (
	DefaultWorkers  = 2
	DefaultInFlight = 2
)

// ErrForeignFence is returned by Submit for a frame whose Ready fence is not a *cuda.Event.
var ErrForeignFence = errors.New("gpuexec: frame's ready fence is not a CUDA event")

// Session is one lane's loaded model (package model's *Model): its ONNX Runtime session on the
// lane's CUDA stream, its preprocessing and its post-processing.
type Session interface {
	Session() *infer.Session
	Preprocess() preprocess.Spec
	NewDecoder() (detect.Decoder, error)
	Close()
}

// LoadFunc loads one lane's session on the lane's thread: ONNX Runtime's CUDA provider queueing
// on stream (infer.StreamOptions), with CUDA graphs enabled (enable_cuda_graph) when graph is
// set. Errors should name the model.
type LoadFunc func(stream *cuda.Stream, graph bool) (Session, error)

// Options configure an Engine.
type Options struct {
	// Name is the model's name, for errors and logs.
	Name string
	// Workers is the number of lanes and InFlight the input sets (batches in flight) of each;
	// 0: DefaultWorkers, DefaultInFlight.
	Workers, InFlight int
	// Graph replays each set's batches as a CUDA graph; a model whose graph cannot be captured
	// is loaded again without (logged).
	Graph bool
	// Logf reports that fallback (nil: discard).
	Logf func(format string, args ...any)
}

// Engine runs one model version on one GPU in lanes, one per inference worker: each lane has its
// own CUDA stream, ONNX Runtime session on that stream and InFlight input sets. A batch goes to
// one set: the fused preprocessing kernel writes each frame into a slot of the set's device
// input [MaxBatch,3,H,W] float32 (float16 for a model whose input is: its float16 rewrite on a
// GPU lane), ONNX Runtime's CUDA provider runs on it through IO binding
// into the set's device outputs (queued without a host wait and replayed as a CUDA graph when
// graphs are on), the outputs of the batch's frames are copied to the set's pinned host memory,
// and an event marks the end. Everything is allocated at Open; a batch allocates nothing.
type Engine struct {
	dev      *cuda.Device
	maxBatch int
	graph    bool
	lanes    []*lane
}

// lane is one worker's share of an Engine. Everything it does with CUDA and ONNX Runtime runs
// on its own OS thread (serve), from load to close: ONNX Runtime's CUDA provider keeps captured
// CUDA graphs per thread, so the thread that warmed a session up (capturing its graphs) must be
// the one that replays them. The caller's worker hands it requests (op) and waits for each.
type lane struct {
	sess   Session // its session, on stream
	stream *cuda.Stream
	pre    gpu.Preprocessor
	dec    detect.Decoder
	sets   []set
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

// set is one batch in flight.
type set struct {
	input   *cuda.Buffer       // [maxBatch,3,H,W] float32, or float16 (Session.InputHalf)
	outs    []*cuda.Buffer     // output i, room for maxBatch items
	host    []*cuda.HostBuffer // pinned copies of the outputs
	hostF   [][]float32        // host[i] as float32 values
	batched []bool             // output i has the batch as dim 0
	views   []tensor.Tensor    // what Wait returns: views of hostF
	run     *infer.DeviceRun
	done    *cuda.Event
	n       int // frames of the batch submitted last
}

// Open loads o.Workers lanes on GPU ordinal (load called on each lane's thread) and warms each
// up at the one batch shape it runs; with o.Graph, a model whose CUDA graph cannot be captured
// is loaded again without graphs.
func Open(ordinal int, o Options, load LoadFunc) (*Engine, error) {
	e, err := open(ordinal, o, load, o.Graph)
	if err != nil && o.Graph && errors.Is(err, errWarmUp) {
		if o.Logf != nil {
			o.Logf("model %s on cuda:%d: running without CUDA graphs: %v", o.Name, ordinal, err)
		}
		e, err = open(ordinal, o, load, false)
	}
	return e, err
}

// errWarmUp marks a failure of the warm-up runs (where a CUDA graph is captured).
var errWarmUp = errors.New("warm-up")

func open(ordinal int, o Options, load LoadFunc, graph bool) (*Engine, error) {
	dev, err := cuda.Open(ordinal)
	if err != nil {
		return nil, fmt.Errorf("model %s: GPU %d: %w", o.Name, ordinal, err)
	}
	e := &Engine{dev: dev, graph: graph}
	workers, inflight := o.Workers, o.InFlight
	if workers <= 0 {
		workers = DefaultWorkers
	}
	if inflight <= 0 {
		inflight = DefaultInFlight
	}
	for range workers {
		ln := &lane{ops: make(chan *laneOp), done: make(chan error), exited: make(chan struct{})}
		ready := make(chan error)
		go e.serve(ln, ready, load, o.Name, inflight)
		if err := <-ready; err != nil {
			<-ln.exited
			e.Close()
			return nil, err
		}
		e.lanes = append(e.lanes, ln)
	}
	return e, nil
}

// serve is a lane's thread: it loads the lane (reporting to ready), runs its requests until ops
// is closed, and frees it.
func (e *Engine) serve(ln *lane, ready chan<- error, load LoadFunc, name string, inflight int) {
	defer close(ln.exited)
	err := e.dev.RunLocked(func() error {
		defer e.freeLane(ln)
		if err := e.addLane(ln, load, name, inflight); err != nil {
			return err
		}
		ready <- nil
		for op := range ln.ops {
			s := &ln.sets[op.slot]
			var err error
			if op.wait {
				err = s.done.Synchronize()
			} else if err = e.queue(ln, s, op.frames, op.tr); err != nil {
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
func (e *Engine) addLane(ln *lane, load LoadFunc, name string, inflight int) error {
	var err error
	if ln.stream, err = e.dev.NewStream(); err != nil {
		return fmt.Errorf("model %s on cuda:%d: %w", name, e.dev.Ordinal(), err)
	}
	if ln.sess, err = load(ln.stream, e.graph); err != nil {
		return err // names the model already
	}
	if err := e.initLane(ln, inflight); err != nil {
		return fmt.Errorf("model %s on cuda:%d: %w", name, e.dev.Ordinal(), err)
	}
	return nil
}

// initLane allocates the lane's buffers for its session and warms it up.
func (e *Engine) initLane(ln *lane, inflight int) error {
	sess := ln.sess.Session()
	if e.maxBatch == 0 {
		e.maxBatch = sess.MaxBatch()
	}
	var err error
	if ln.dec, err = ln.sess.NewDecoder(); err != nil {
		return err
	}
	ln.pre = gpu.Preprocessor{Device: e.dev, Spec: ln.sess.Preprocess(), Half: sess.InputHalf()}
	if err := ln.pre.Init(); err != nil {
		return err
	}
	ln.sets = make([]set, inflight)
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
			if err := e.infer(&ln.sets[k]); err != nil {
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
func (e *Engine) initSet(ln *lane, s *set, k int) error {
	sess := ln.sess.Session()
	var err error
	if s.input, err = e.dev.Alloc(e.maxBatch * ln.pre.SlotBytes()); err != nil {
		return err
	}
	if s.done, err = e.dev.NewEvent(false); err != nil {
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
		s.outs = append(s.outs, b)
		h, err := e.dev.AllocHost(4 * n)
		if err != nil {
			return err
		}
		s.host, s.hostF = append(s.host, h), append(s.hostF, h.Float32s())
		s.batched = append(s.batched, batched)
		s.views = append(s.views, tensor.Tensor{Info: tensor.Info{Name: o.Name, Type: o.Type, Shape: append([]int64(nil), o.Shape...)}})
		ptrs = append(ptrs, b.Ptr)
	}
	if s.run, err = sess.NewDeviceRun(e.dev.Ordinal(), s.input.Ptr, ptrs); err != nil {
		return err
	}
	if e.graph {
		return s.run.UseGraph(k + 1) // a graph replays fixed addresses: one per set
	}
	return nil
}

// infer queues the model on set's input at the full batch shape (slots past the batch's frames
// hold stale data whose results are not copied): without a host wait when replaying a CUDA
// graph; else ONNX Runtime waits for its stream (queued runs without a graph abort in the
// CUDA EP plugin: docs/benchmarks-gpu.md).
func (e *Engine) infer(s *set) error {
	if e.graph {
		return s.run.Queue(e.maxBatch)
	}
	return s.run.Run(e.maxBatch)
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

// Submit queues a batch of NV12 frames in the GPU's memory on slot of lane: frame b goes to
// item b of the slot's device input (after the frame's ready event), the model runs at the
// full MaxBatch shape, the outputs of the len(frames) items are copied to the slot's pinned
// host memory, and an event marks the end; it returns without waiting for the device. tr[b]
// receives frame b's model-input→frame mapping. The frames must stay held until Wait(lane,
// slot); after an error they may be released at once. Call it from a Bound worker thread.
// Errors: a batch larger than MaxBatch, a lane or slot out of range, a host or non-NV12 frame
// (preprocess/gpu's errors), ErrForeignFence, the driver's or ONNX Runtime's.
func (e *Engine) Submit(ln, slot int, frames []*frame.Frame, tr []preprocess.Transform) error {
	l, s, err := e.set(ln, slot)
	if err != nil {
		return err
	}
	n := len(frames)
	if n < 1 || n > e.maxBatch || len(tr) < n {
		return fmt.Errorf("model on cuda:%d: batch of %d frames (%d transforms) outside 1…%d", e.dev.Ordinal(), n, len(tr), e.maxBatch)
	}
	l.op = laneOp{slot: slot, frames: frames, tr: tr}
	l.ops <- &l.op
	err = <-l.done
	l.op = laneOp{}
	if err != nil {
		return err
	}
	s.n = n
	return nil
}

func (e *Engine) queue(ln *lane, s *set, frames []*frame.Frame, tr []preprocess.Transform) error {
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
		t, err := ln.pre.Run(ln.stream, f, s.input.Ptr, i)
		if err != nil {
			return fmt.Errorf("preprocessing frame %d: %w", f.Index, err)
		}
		tr[i] = t
	}
	if err := e.infer(s); err != nil {
		return err
	}
	for i, o := range s.outs {
		if err := ln.stream.CopyDtoH(s.host[i], o.Ptr, s.run.OutputBytes(i, len(frames))); err != nil {
			return err
		}
	}
	return s.done.Record(ln.stream)
}

// Wait blocks until slot's batch is done and returns its outputs ([n,…] float32 in host memory,
// n the frames submitted), valid until the slot's next Submit.
func (e *Engine) Wait(ln, slot int) ([]tensor.Tensor, error) {
	l, s, err := e.set(ln, slot)
	if err != nil {
		return nil, err
	}
	l.op = laneOp{wait: true, slot: slot}
	l.ops <- &l.op
	if err := <-l.done; err != nil {
		return nil, err
	}
	for i := range s.views {
		if s.batched[i] {
			s.views[i].Shape[0] = int64(s.n)
		}
		s.views[i].Data = s.hostF[i][:s.run.OutputBytes(i, s.n)/4]
	}
	return s.views, nil
}

func (e *Engine) set(ln, slot int) (*lane, *set, error) {
	if ln < 0 || ln >= len(e.lanes) || slot < 0 || slot >= len(e.lanes[ln].sets) {
		return nil, nil, fmt.Errorf("model on cuda:%d: lane %d slot %d outside %d lanes of %d", e.dev.Ordinal(), ln, slot, len(e.lanes), len(e.lanes[0].sets))
	}
	l := e.lanes[ln]
	return l, &l.sets[slot], nil
}

// Device is the GPU ordinal.
func (e *Engine) Device() int { return e.dev.Ordinal() }

// Lanes is how many workers run the engine at once.
func (e *Engine) Lanes() int { return len(e.lanes) }

// InFlight is how many batches one lane keeps queued.
func (e *Engine) InFlight() int { return len(e.lanes[0].sets) }

// MaxBatch is the batch shape every run has.
func (e *Engine) MaxBatch() int { return e.maxBatch }

// CUDAGraph reports whether batches replay CUDA graphs (queued without a host wait).
func (e *Engine) CUDAGraph() bool { return e.graph }

// Bind makes the GPU's context current on the calling OS thread and locks the calling goroutine
// to it for its life (cuda.Device.Bind): a worker calls it once, before its first Submit. The
// lanes run on threads of their own; the worker's thread releases the frames (NVDEC surfaces)
// after each batch.
func (e *Engine) Bind() error { return e.dev.Bind() }

// LaneDecoder is lane's post-processor.
func (e *Engine) LaneDecoder(ln int) detect.Decoder { return e.lanes[ln].dec }

// First is lane 0's session (the version's description in package model); Close frees it.
func (e *Engine) First() Session { return e.lanes[0].sess }

// Close ends the lanes' threads, which free everything they hold, the lanes' sessions
// included, after the last batch (its worker waited for it), and releases the device.
func (e *Engine) Close() error {
	for _, ln := range e.lanes {
		close(ln.ops)
		<-ln.exited
	}
	e.lanes = nil
	return e.dev.Close()
}

// freeLane frees what a lane holds, in dependency order, on its thread.
func (e *Engine) freeLane(ln *lane) {
	if ln.stream != nil {
		ln.stream.Synchronize()
	}
	for k := range ln.sets {
		s := &ln.sets[k]
		if s.run != nil {
			s.run.Release() // the IO binding before its session
		}
		if s.input != nil {
			s.input.Free(nil)
		}
		for i := range s.outs {
			s.outs[i].Free(nil)
		}
		for i := range s.host {
			s.host[i].Free()
		}
		if s.done != nil {
			s.done.Destroy()
		}
	}
	if ln.sess != nil {
		ln.sess.Close()
	}
	ln.pre.Close()
	if ln.stream != nil {
		ln.stream.Destroy()
	}
}
