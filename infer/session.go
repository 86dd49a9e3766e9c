// Package infer runs ONNX models through ONNX Runtime (internal/ort): sessions with native,
// preallocated input and output buffers per batch size, so a steady-state run allocates nothing.
package infer

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/vinfer/vinfer/internal/ort"
	"github.com/vinfer/vinfer/tensor"
)

// Execution providers.
const (
	ProviderCPU      = "cpu"
	ProviderCUDA     = "cuda"
	ProviderTensorRT = "tensorrt"
)

// Config describes a session to open.
type Config struct {
	// Path of the .onnx file (used when Model is nil, and in messages).
	Path string
	// Model holds the ONNX bytes (e.g. mmap'ed); ORT reads them during Open only.
	Model []byte
	// IntraOpThreads and InterOpThreads for ONNX Runtime (0: its defaults).
	IntraOpThreads, InterOpThreads int
	// Provider is the execution provider: "cpu" (default), "cuda", "tensorrt".
	Provider string
	// OptimizedModelPath, when set, makes ORT write its optimized graph there.
	OptimizedModelPath string
	// GraphOptimization is ort.OptDisable…ort.OptAll (0 here means OptAll); a session loading an
	// already optimized model may disable it.
	GraphOptimization int
	// DisableOptimization turns graph optimization off (for loading a cached optimized model).
	DisableOptimization bool
	// MaxBatch is the largest batch Run takes; forced to the model's batch when that is fixed.
	MaxBatch int
}

var (
	envOnce sync.Once
	env     *ort.Env
	envErr  error
)

// Env returns the process-wide ONNX Runtime environment, loading the library on first use.
func Env() (*ort.Env, error) {
	envOnce.Do(func() {
		if envErr = ort.Load(""); envErr != nil {
			return
		}
		env, envErr = ort.NewEnv(ort.LogError, "vinfer")
	})
	return env, envErr
}

// Session is one model ready to run batches. Not safe for concurrent use: one inference worker
// owns a Session (its buffers are reused across runs).
type Session struct {
	cfg      Config
	sess     *ort.Session
	input    tensor.Info
	outputs  []tensor.Info
	maxBatch int
	cpu      *ort.MemoryInfo
	inNames  *ort.Names
	outNames *ort.Names
	bufs     []*batchBuffers // by batch size
}

// batchBuffers are the native tensors for one batch size.
type batchBuffers struct {
	inPtr   unsafe.Pointer
	in      []float32
	inVal   *ort.Value
	inVals  *ort.Values
	outPtrs []unsafe.Pointer
	outVals []*ort.Value
	outArr  *ort.Values
	outs    []tensor.Tensor
}

// Open loads a model. Errors carry ONNX Runtime's message (e.g. for a file that is not ONNX).
func Open(cfg Config) (*Session, error) {
	if cfg.Provider == "" {
		cfg.Provider = ProviderCPU
	}
	if cfg.Provider != ProviderCPU {
		if openProvider == nil {
			return nil, fmt.Errorf("infer: execution provider %q is not available in this build (use provider: cpu)", cfg.Provider)
		}
	}
	e, err := Env()
	if err != nil {
		return nil, err
	}
	model := cfg.Model
	if model == nil {
		if model, err = os.ReadFile(cfg.Path); err != nil {
			return nil, fmt.Errorf("infer: %w", err)
		}
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer opts.Release()
	if err := configure(opts, cfg); err != nil {
		return nil, err
	}
	if cfg.Provider != ProviderCPU {
		if err := openProvider(e, opts, cfg); err != nil {
			return nil, err
		}
	}
	sess, err := ort.NewSessionFromBytes(e, model, opts)
	if err != nil {
		return nil, fmt.Errorf("infer: loading %s: %w (is it an ONNX model?)", cfg.Path, err)
	}
	s := &Session{cfg: cfg, sess: sess}
	if err := s.init(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// openProvider appends a non-CPU execution provider (set by the GPU build, infer/cuda.go).
var openProvider func(e *ort.Env, o *ort.SessionOptions, cfg Config) error

func configure(o *ort.SessionOptions, cfg Config) error {
	var errs []error
	if cfg.IntraOpThreads > 0 {
		errs = append(errs, o.SetIntraOpThreads(cfg.IntraOpThreads))
	}
	if cfg.InterOpThreads > 0 {
		errs = append(errs, o.SetInterOpThreads(cfg.InterOpThreads))
	}
	level := ort.OptAll
	if cfg.DisableOptimization {
		level = ort.OptDisable
	}
	errs = append(errs, o.SetGraphOptimization(level))
	if cfg.OptimizedModelPath != "" {
		errs = append(errs, o.SetOptimizedModelPath(cfg.OptimizedModelPath))
	}
	return errors.Join(errs...)
}

func (s *Session) init() error {
	if len(s.sess.Inputs) != 1 {
		return fmt.Errorf("infer: %s has %d inputs; vinfer serves single-input image models", s.cfg.Path, len(s.sess.Inputs))
	}
	in := s.sess.Inputs[0]
	if in.Type != ort.Float32 {
		return fmt.Errorf("infer: %s input %q is %s; vinfer feeds float32", s.cfg.Path, in.Name, ort.TypeName(in.Type))
	}
	if len(in.Shape) != 4 || in.Shape[1] != 3 {
		return fmt.Errorf("infer: %s input %q has shape %v; want [N,3,H,W]", s.cfg.Path, in.Name, in.Shape)
	}
	s.input = tensor.Info{Name: in.Name, Shape: in.Shape, Type: "float32"}
	var names []string
	for _, o := range s.sess.Outputs {
		if o.Type != ort.Float32 {
			return fmt.Errorf("infer: %s output %q is %s; vinfer decodes float32 outputs", s.cfg.Path, o.Name, ort.TypeName(o.Type))
		}
		s.outputs = append(s.outputs, tensor.Info{Name: o.Name, Shape: o.Shape, Type: "float32"})
		names = append(names, o.Name)
	}
	s.maxBatch = s.cfg.MaxBatch
	if s.maxBatch < 1 {
		s.maxBatch = 1
	}
	if b := in.Shape[0]; b > 0 {
		s.maxBatch = int(b)
	}
	var err error
	if s.cpu, err = ort.NewCPUMemoryInfo(); err != nil {
		return err
	}
	s.inNames = ort.NewNames([]string{in.Name})
	s.outNames = ort.NewNames(names)
	s.bufs = make([]*batchBuffers, s.maxBatch+1)
	return nil
}

// InputInfo describes the model input ([N,3,H,W] float32; N -1 when dynamic).
func (s *Session) InputInfo() tensor.Info { return s.input }

// Outputs describes the model outputs as declared (dynamic dims -1).
func (s *Session) Outputs() []tensor.Info { return s.outputs }

// InputSize returns the input width and height in pixels (0 when dynamic).
func (s *Session) InputSize() (w, h int) {
	return max(int(s.input.Shape[3]), 0), max(int(s.input.Shape[2]), 0)
}

// MaxBatch is the largest batch Run accepts.
func (s *Session) MaxBatch() int { return s.maxBatch }

// FixedBatch reports whether the model's batch dimension is fixed (1 for the bundled models).
func (s *Session) FixedBatch() bool { return s.input.Shape[0] > 0 }

// Input returns the [batch,3,H,W] input buffer for a run of batch frames (native memory,
// reused across runs).
func (s *Session) Input(batch int) ([]float32, error) {
	b, err := s.buffers(batch)
	if err != nil {
		return nil, err
	}
	return b.in, nil
}

// Run infers the batch written into Input(batch). The returned tensors are views of native
// buffers valid until the next Run with the same batch size.
func (s *Session) Run(batch int) ([]tensor.Tensor, error) {
	b, err := s.buffers(batch)
	if err != nil {
		return nil, err
	}
	if err := s.sess.Run(s.inNames, b.inVals, s.outNames, b.outArr); err != nil {
		return nil, fmt.Errorf("infer: %s: %w", s.cfg.Path, err)
	}
	return b.outs, nil
}

func (s *Session) buffers(batch int) (*batchBuffers, error) {
	if batch < 1 || batch > s.maxBatch {
		return nil, fmt.Errorf("infer: batch %d outside 1…%d for %s", batch, s.maxBatch, s.cfg.Path)
	}
	if b := s.bufs[batch]; b != nil {
		return b, nil
	}
	b, err := s.allocate(batch)
	if err != nil {
		return nil, err
	}
	s.bufs[batch] = b
	return b, nil
}

func (s *Session) allocate(batch int) (*batchBuffers, error) {
	w, h := s.InputSize()
	if w == 0 || h == 0 {
		return nil, fmt.Errorf("infer: %s has a dynamic input size %v; not supported yet", s.cfg.Path, s.input.Shape)
	}
	b := &batchBuffers{}
	shape := []int64{int64(batch), 3, int64(h), int64(w)}
	n := int(tensor.Elements(shape))
	b.inPtr = ort.Alloc(n * 4)
	b.in = unsafe.Slice((*float32)(b.inPtr), n)
	var err error
	if b.inVal, err = ort.NewTensor(s.cpu, b.inPtr, n*4, ort.Float32, shape); err != nil {
		b.free()
		return nil, err
	}
	b.inVals = ort.NewValues(1)
	b.inVals.Set(0, b.inVal)
	shapes, err := s.outputShapes(b, batch)
	if err != nil {
		b.free()
		return nil, err
	}
	b.outArr = ort.NewValues(len(s.outputs))
	for i, shp := range shapes {
		m := int(tensor.Elements(shp))
		p := ort.Alloc(m * 4)
		v, err := ort.NewTensor(s.cpu, p, m*4, ort.Float32, shp)
		b.outPtrs = append(b.outPtrs, p)
		if err != nil {
			b.free()
			return nil, err
		}
		b.outVals = append(b.outVals, v)
		b.outArr.Set(i, v)
		info := s.outputs[i]
		info.Shape = shp
		b.outs = append(b.outs, tensor.Tensor{Info: info, Data: unsafe.Slice((*float32)(p), m)})
	}
	return b, nil
}

// outputShapes resolves the outputs' shapes for a batch: dim 0 is the batch when dynamic; other
// dynamic dims come from one run with ORT-allocated outputs.
func (s *Session) outputShapes(b *batchBuffers, batch int) ([][]int64, error) {
	shapes := make([][]int64, len(s.outputs))
	probe := false
	for i, o := range s.outputs {
		shp := append([]int64(nil), o.Shape...)
		if len(shp) > 0 && shp[0] < 0 {
			shp[0] = int64(batch)
		}
		if tensor.Elements(shp) < 0 {
			probe = true
		}
		shapes[i] = shp
	}
	if !probe {
		return shapes, nil
	}
	outs := ort.NewValues(len(s.outputs))
	defer outs.Release()
	if err := s.sess.Run(s.inNames, b.inVals, s.outNames, outs); err != nil {
		return nil, fmt.Errorf("infer: %s: %w", s.cfg.Path, err)
	}
	for i := range s.outputs {
		v := outs.Take(i)
		shp, err := v.TensorShape()
		v.Release()
		if err != nil {
			return nil, err
		}
		shapes[i] = shp
	}
	return shapes, nil
}

func (b *batchBuffers) free() {
	b.inVal.Release()
	b.inVals.Release()
	for _, v := range b.outVals {
		v.Release()
	}
	b.outArr.Release()
	if b.inPtr != nil {
		ort.Free(b.inPtr)
	}
	for _, p := range b.outPtrs {
		ort.Free(p)
	}
	*b = batchBuffers{}
}

// Close frees the session and its buffers. Safe to call more than once.
func (s *Session) Close() {
	for _, b := range s.bufs {
		if b != nil {
			b.free()
		}
	}
	s.bufs = nil
	s.inNames.Release()
	s.outNames.Release()
	s.cpu.Release()
	s.sess.Release()
}
