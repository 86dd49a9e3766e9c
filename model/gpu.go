package model

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/gpurun"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/preprocess/gpu"
	"github.com/vinfer/vinfer/tensor"
)

// gpuEngine runs one model version on one GPU, on its own CUDA stream: the fused
// preprocessing kernel writes each frame into a slot of the device input batch
// [MaxBatch,3,H,W] float32, ONNX Runtime's CUDA provider runs on that batch through IO
// binding into device output buffers, and only the outputs of the frames of the batch are
// copied to pinned host memory, where the family's decoder reads them. Everything is allocated
// at load; a batch allocates nothing.
type gpuEngine struct {
	dev      *cuda.Device
	stream   *cuda.Stream
	pre      gpu.Preprocessor
	input    *cuda.Buffer       // [maxBatch,3,H,W] float32
	outs     []*cuda.Buffer     // output i, room for maxBatch items
	host     []*cuda.HostBuffer // pinned copies of the outputs
	hostF    [][]float32        // host[i] as float32 values
	batched  []bool             // output i has the batch as dim 0
	views    []tensor.Tensor    // what RunFrames returns: views of hostF
	run      *infer.DeviceRun
	maxBatch int
}

// openGPU loads decl on GPU ordinal: the device's shared context, a stream, the session on
// that stream, the buffers; then warms the session up at the one batch shape it will run.
// The caller releases the returned model and engine with close.
func (l *Loader) openGPU(decl config.Model, ordinal int) (*Model, *gpuEngine, error) {
	if decl.Provider != config.ProviderCUDA {
		return nil, nil, fmt.Errorf("model %s: provider %q: GPU frames need provider: cuda", decl.Name, decl.Provider)
	}
	dev, err := cuda.Open(ordinal)
	if err != nil {
		return nil, nil, fmt.Errorf("model %s: GPU %d: %w", decl.Name, ordinal, err)
	}
	e := &gpuEngine{dev: dev}
	fail := func(m *Model, err error) (*Model, *gpuEngine, error) {
		e.close(m)
		return nil, nil, fmt.Errorf("model %s on cuda:%d: %w", decl.Name, ordinal, err)
	}
	if e.stream, err = dev.NewStream(); err != nil {
		return fail(nil, err)
	}
	m, err := l.load(decl, &onDevice{ordinal: ordinal, stream: e.stream})
	if err != nil {
		e.close(nil)
		return nil, nil, err // names the model already
	}
	if err := e.init(m); err != nil {
		return fail(m, err)
	}
	return m, e, nil
}

// init allocates the engine's buffers for m's session and warms it up.
func (e *gpuEngine) init(m *Model) error {
	sess := m.Session()
	e.maxBatch = sess.MaxBatch()
	e.pre = gpu.Preprocessor{Device: e.dev, Spec: m.Pre}
	if err := e.pre.Init(); err != nil {
		return err
	}
	var err error
	if e.input, err = e.dev.Alloc(e.maxBatch * e.pre.SlotBytes()); err != nil {
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
		h, err := e.dev.AllocHost(4 * n)
		if err != nil {
			b.Free(nil)
			return err
		}
		e.outs, e.host, e.hostF = append(e.outs, b), append(e.host, h), append(e.hostF, h.Float32s())
		e.batched = append(e.batched, batched)
		e.views = append(e.views, tensor.Tensor{Info: tensor.Info{Name: o.Name, Type: o.Type, Shape: append([]int64(nil), o.Shape...)}})
		ptrs = append(ptrs, b.Ptr)
	}
	if e.run, err = sess.NewDeviceRun(e.dev.Ordinal(), e.input.Ptr, ptrs); err != nil {
		return err
	}
	// Warm-up, off the frame path: ONNX Runtime plans memory and picks convolution algorithms
	// at the first runs of a shape. Every batch runs at the full shape (the CUDA EP plugin hung
	// when batch shapes varied: docs/benchmarks-gpu.md), so that is the only one warmed.
	return e.dev.RunLocked(func() error {
		if err := e.stream.Fill32(e.input.Ptr, 0, e.input.Size/4); err != nil {
			return err
		}
		for range 2 {
			if err := e.run.Run(e.maxBatch); err != nil {
				return fmt.Errorf("warm-up inference of a batch of %d: %w", e.maxBatch, err)
			}
		}
		return e.stream.Synchronize()
	})
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

// runFrames is DeviceVersion.RunFrames.
func (e *gpuEngine) runFrames(frames []*frame.Frame, tr []preprocess.Transform) ([]tensor.Tensor, error) {
	n := len(frames)
	if n < 1 || n > e.maxBatch || len(tr) < n {
		return nil, fmt.Errorf("model on cuda:%d: batch of %d frames (%d transforms) outside 1…%d", e.dev.Ordinal(), n, len(tr), e.maxBatch)
	}
	for i, f := range frames {
		if ev := gpurun.Ready(f); ev != nil {
			if err := e.stream.Wait(ev); err != nil {
				return nil, err
			}
		}
		t, err := e.pre.Run(e.stream, f, e.input.Ptr, i)
		if err != nil {
			return nil, fmt.Errorf("preprocessing frame %d: %w", f.Index, err)
		}
		tr[i] = t
	}
	// Always the full batch shape: slots n… hold stale data whose results are not copied.
	if err := e.run.Run(e.maxBatch); err != nil {
		return nil, err
	}
	for i, o := range e.outs {
		bytes := e.run.OutputBytes(i, n)
		if err := e.stream.CopyDtoH(e.host[i], o.Ptr, bytes); err != nil {
			return nil, err
		}
		if e.batched[i] {
			e.views[i].Shape[0] = int64(n)
		}
		e.views[i].Data = e.hostF[i][:bytes/4]
	}
	if err := e.stream.Synchronize(); err != nil {
		return nil, err
	}
	return e.views, nil
}

// close frees m's session (when not nil) and everything the engine holds, in dependency
// order, after the last batch (RunFrames synchronized the stream).
func (e *gpuEngine) close(m *Model) error {
	var errs []error
	if e.run != nil {
		e.run.Release() // the IO binding before its session
		e.run = nil
	}
	if m != nil {
		m.Close()
	}
	errs = append(errs, e.pre.Close())
	if e.input != nil {
		errs = append(errs, e.input.Free(nil))
	}
	for i := range e.outs {
		errs = append(errs, e.outs[i].Free(nil), e.host[i].Free())
	}
	if e.stream != nil {
		errs = append(errs, e.stream.Destroy())
	}
	errs = append(errs, e.dev.Close())
	return errors.Join(errs...)
}

// DeviceVersion is a Version loaded on a GPU (Registry.GetDevice). It takes decoded frames in
// that GPU's memory (gpurun.Decoder's) and preprocesses them itself: it implements
// pipeline.FrameRunner. Its Input and Run are the host-memory path of the same CUDA session
// (ONNX Runtime copies), which the pipeline does not use for it.
type DeviceVersion struct{ *Version }

// OnDevice returns v as a DeviceVersion when it runs on a GPU; ok is false for a host version.
func (v *Version) OnDevice() (d DeviceVersion, ok bool) {
	return DeviceVersion{v}, v.gpu != nil
}

// Device is the GPU ordinal.
func (d DeviceVersion) Device() int { return d.gpu.dev.Ordinal() }

// Bind makes the GPU's context current on the calling OS thread, which the caller has locked
// (runtime.LockOSThread) for its life: a worker calls it once, before its first RunFrames.
func (d DeviceVersion) Bind() error {
	if err := d.gpu.dev.Bind(); err != nil {
		return err
	}
	runtime.UnlockOSThread() // Bind locked once more; the caller's own lock holds the thread
	return nil
}

// RunFrames infers a batch of NV12 frames in the GPU's memory: frame b goes to slot b of the
// device input batch (after its decoder's ready event), the model runs at the full MaxBatch
// shape, the outputs of the len(frames) items are copied to pinned host memory, and the
// stream is synchronized. tr[b] receives frame b's model-input→frame mapping. The returned
// tensors ([len(frames),…] float32, host memory) are valid until the next RunFrames; the
// frames may be released when it returns. Call it from the bound worker thread. Errors: a
// batch larger than MaxBatch, a host or non-NV12 frame (preprocess/gpu's errors), the
// driver's or ONNX Runtime's.
func (d DeviceVersion) RunFrames(frames []*frame.Frame, tr []preprocess.Transform) ([]tensor.Tensor, error) {
	return d.gpu.runFrames(frames, tr)
}
