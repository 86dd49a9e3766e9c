// Package infer runs ONNX image models through ONNX Runtime (internal/ort).
//
// A Session holds one loaded model with native (C heap) input and output buffers allocated once,
// so a steady-state Run makes no Go heap allocation and hands out views of native memory.
package infer

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/vinfer/vinfer/internal/ort"
	"github.com/vinfer/vinfer/internal/sigstack"
	"github.com/vinfer/vinfer/tensor"
)

// Execution providers for Config.Provider.
const (
	ProviderCPU      = "cpu"
	ProviderCUDA     = "cuda"
	ProviderTensorRT = "tensorrt"
)

// ErrProviderUnavailable is wrapped by Open's error when Config.Provider names a known execution
// provider that this build or machine does not offer; callers may fall back to ProviderCPU.
var ErrProviderUnavailable = errors.New("execution provider not available in this build or on this machine")

// ProviderFunc configures opts to run on an execution provider (plugin library registration in
// env, SessionOptionsAppendExecutionProvider_V2 with cfg.Device and cfg.ProviderOptions).
type ProviderFunc func(env *ort.Env, opts *ort.SessionOptions, cfg *Config) error

var (
	providersMu sync.Mutex
	providers   = map[string]ProviderFunc{}
)

// RegisterProvider makes Open accept Config.Provider == name, calling fn on each session's
// options. GPU support code registers ProviderCUDA and ProviderTensorRT where they work.
func RegisterProvider(name string, fn ProviderFunc) {
	providersMu.Lock()
	defer providersMu.Unlock()
	providers[name] = fn
}

func provider(name string) (ProviderFunc, error) {
	providersMu.Lock()
	defer providersMu.Unlock()
	if name == ProviderCPU {
		return nil, nil
	}
	if fn := providers[name]; fn != nil {
		return fn, nil
	}
	avail := []string{ProviderCPU}
	for n := range providers {
		avail = append(avail, n)
	}
	sort.Strings(avail[1:])
	if name == ProviderTensorRT {
		// No code path loads libnvinfer: the refusal is the whole of TensorRT support.
		return nil, fmt.Errorf("infer: provider %q: %w: this build does not load TensorRT (libnvinfer); use provider: cuda, with precision: fp16 for float16 (available: %s)",
			name, ErrProviderUnavailable, strings.Join(avail, ", "))
	}
	if name == ProviderCUDA {
		return nil, fmt.Errorf("infer: provider %q: %w (available: %s)", name, ErrProviderUnavailable, strings.Join(avail, ", "))
	}
	return nil, fmt.Errorf("infer: unknown execution provider %q (available: %s)", name, strings.Join(avail, ", "))
}

// Config describes a model to open.
type Config struct {
	// Path is the .onnx file, read by ONNX Runtime when Model is nil; also names the model in
	// errors.
	Path string
	// Model, when not nil, holds the ONNX bytes (Go or native memory, e.g. an mmap'ed file):
	// ONNX Runtime parses them during Open without copying them into the Go heap; the caller may
	// unmap them once Open returns.
	Model []byte
	// IntraOpThreads is the number of threads one operator uses (0: one per physical core).
	IntraOpThreads int
	// InterOpThreads > 1 selects parallel execution of independent operators on that many
	// threads; 0 or 1 runs operators sequentially.
	InterOpThreads int
	// Provider is the execution provider: ProviderCPU (default), ProviderCUDA, ProviderTensorRT.
	Provider string
	// Device is the device ordinal for a GPU provider.
	Device int
	// ProviderOptions are passed to the GPU provider as is (e.g. "cudnn_conv_algo_search").
	ProviderOptions map[string]string
	// OptimizedModelPath, when set, makes Open write the optimized graph there (a cache: open it
	// later with DisableOptimization to skip graph optimization).
	OptimizedModelPath string
	// DisableOptimization turns graph optimization off (for a model already optimized); the
	// default is ONNX Runtime's full optimization (ORT_ENABLE_ALL).
	DisableOptimization bool
	// ConfigEntries are session configuration entries, e.g.
	// "session.intra_op.allow_spinning": "0" (onnxruntime_session_options_config_keys.h).
	ConfigEntries map[string]string
	// MaxBatch is the largest batch Run takes for a model with a dynamic batch dimension
	// (default 1). For a fixed-batch model it is forced to the model's batch.
	MaxBatch int
	// InputWidth and InputHeight give the input's size in pixels where the model leaves it
	// dynamic (e.g. a text recognizer's [N,3,32,W]); ignored for fixed dimensions.
	InputWidth, InputHeight int
}

// Session is one loaded model ready to run batches of images: input [N,C,H,W] float32 (C is 3
// for the bundled models), float32 outputs.
//
// Buffers: the input buffers for MaxBatch images and the output buffers are native memory; the
// tensors Run(n) returns view them. There are InputSets input buffers: set 0, Input(n), is
// allocated at Open; sets 1… on their first InputSet call, for a caller that writes the next
// batch while another runs (double buffering). The output buffers are shared by every set. Outputs whose
// dimensions other than the batch are dynamic (data-dependent) are allocated by ONNX Runtime
// at each run from its CPU arena (ONNX Runtime requires a preallocated output to match the
// result's shape exactly).
//
// A Session is not safe for concurrent use, with one exception: while one goroutine runs a set
// (RunSet) another may fill a different set (InputSet). One inference worker owns the rest:
// it calls Run and reads the outputs before the next Run.
type Session struct {
	name       string
	sess       *ort.Session
	inputs     []tensor.Info
	outputs    []tensor.Info
	modelBatch int64 // input dim 0: > 0 fixed, -1 dynamic
	maxBatch   int
	c, h, w    int
	nhwc       bool // the input is [N,H,W,C] (channels last)
	cpu        *ort.MemoryInfo
	inNames    *ort.Names
	outNames   *ort.Names
	in         [InputSets][]float32 // maxBatch × c·h·w each; nil until first used (set 0: at Open)
	half       bool                 // the input is float16: device memory only (DeviceRun)
	outs       []outputBuf
	runs       [InputSets][]*batchRun // by set and batch size; nil until first used
	last       *batchRun              // the latest Run's, holding ONNX Runtime-allocated outputs
}

type outputKind int

const (
	outFixed   outputKind = iota // all dims known: one buffer for every batch size
	outBatched                   // dim 0 is the batch, the others known: MaxBatch items
	outDynamic                   // other dims unknown: ONNX Runtime allocates at each run
)

type outputBuf struct {
	kind  outputKind
	ptr   unsafe.Pointer // outFixed, outBatched
	elems int            // total (outFixed) or per batch item (outBatched)
}

// batchRun holds the ONNX Runtime values for one batch size, over the shared buffers.
type batchRun struct {
	in     *ort.Value
	inArr  *ort.Values
	outArr *ort.Values
	outs   []*ort.Value // preallocated outputs, nil for outDynamic
	views  []tensor.Tensor
}

// InputSets is the number of input buffers of a Session (Input is set 0).
const InputSets = 3

// Open loads a model and allocates its buffers. It loads the ONNX Runtime library on first use
// (ort.Load). Errors name the model and carry ONNX Runtime's message, e.g. for a file that is
// not ONNX; an unavailable provider's error wraps ErrProviderUnavailable.
func Open(cfg Config) (*Session, error) {
	if cfg.Provider == "" {
		cfg.Provider = ProviderCPU
	}
	prov, err := provider(cfg.Provider)
	if err != nil {
		return nil, err
	}
	name := cfg.Path
	if name == "" {
		name = "model"
	}
	if cfg.Model == nil {
		if cfg.Path == "" {
			return nil, errors.New("infer: Config needs Path or Model")
		}
		if _, err := os.Stat(cfg.Path); err != nil {
			return nil, fmt.Errorf("infer: model file: %w", err)
		}
	}
	env, err := ort.SharedEnv()
	if err != nil {
		return nil, err
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer opts.Release()
	if err := configure(opts, &cfg); err != nil {
		return nil, fmt.Errorf("infer: %s: %w", name, err)
	}
	if prov != nil {
		if err := prov(env, opts, &cfg); err != nil {
			return nil, fmt.Errorf("infer: %s: provider %s: %w", name, cfg.Provider, err)
		}
	}
	var sess *ort.Session
	if cfg.Model != nil {
		sess, err = ort.NewSessionFromBytes(env, cfg.Model, opts)
	} else {
		sess, err = ort.NewSession(env, cfg.Path, opts)
	}
	if err != nil {
		var oe *ort.Error
		if errors.As(err, &oe) && oe.Code == ort.CodeInvalidProtobuf {
			return nil, fmt.Errorf("infer: %s is not a valid ONNX model: %w", name, err)
		}
		return nil, fmt.Errorf("infer: loading %s: %w", name, err)
	}
	sigstack.Fix() // the provider's libraries, loaded with the session, may install signal handlers
	s := &Session{name: name, sess: sess}
	if err := s.init(cfg.MaxBatch, cfg.InputWidth, cfg.InputHeight); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func configure(o *ort.SessionOptions, cfg *Config) error {
	var errs []error
	if cfg.IntraOpThreads > 0 {
		errs = append(errs, o.SetIntraOpThreads(cfg.IntraOpThreads))
	}
	if cfg.InterOpThreads > 1 {
		errs = append(errs, o.SetParallelExecution(true), o.SetInterOpThreads(cfg.InterOpThreads))
	}
	level := ort.OptAll
	if cfg.DisableOptimization {
		level = ort.OptDisable
	}
	errs = append(errs, o.SetGraphOptimization(level))
	if cfg.OptimizedModelPath != "" {
		errs = append(errs, o.SetOptimizedModelPath(cfg.OptimizedModelPath))
	}
	keys := make([]string, 0, len(cfg.ConfigEntries))
	for k := range cfg.ConfigEntries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		errs = append(errs, o.AddConfigEntry(k, cfg.ConfigEntries[k]))
	}
	return errors.Join(errs...)
}

func (s *Session) init(maxBatch, inW, inH int) error {
	if len(s.sess.Inputs) != 1 {
		return fmt.Errorf("infer: %s has %d inputs; vinfer serves single-input image models", s.name, len(s.sess.Inputs))
	}
	in := s.sess.Inputs[0]
	if in.Type != ort.Float32 && in.Type != ort.Float16 {
		return fmt.Errorf("infer: %s: input %q is %s, unsupported: vinfer feeds float32, or float16 on the GPU (convert the model to fp32)",
			s.name, in.Name, ort.TypeName(in.Type))
	}
	s.half = in.Type == ort.Float16
	if len(in.Shape) != 4 || in.Shape[0] == 0 {
		return fmt.Errorf("infer: %s: input %q has shape %v; want [N,C,H,W] or [N,H,W,C]", s.name, in.Name, in.Shape)
	}
	// Channels last when the last dimension is 3 colours and the second is not a channel count
	// (person-reidentification-retail-0288's [1,256,128,3]).
	ci, hi, wi := 1, 2, 3
	if in.Shape[3] == 3 && in.Shape[1] != 3 && in.Shape[1] != 1 {
		ci, hi, wi, s.nhwc = 3, 1, 2, true
	}
	c, h, w := in.Shape[ci], in.Shape[hi], in.Shape[wi]
	if h < 0 && inH > 0 {
		h = int64(inH)
	}
	if w < 0 && inW > 0 {
		w = int64(inW)
	}
	if c <= 0 || h <= 0 || w <= 0 {
		return fmt.Errorf("infer: %s: input %q has shape %v; want [N,C,H,W] or [N,H,W,C] with fixed C, H, W (export with a fixed input size, or set the model's input size)",
			s.name, in.Name, in.Shape)
	}
	s.inputs = []tensor.Info{{Name: in.Name, Shape: in.Shape, Type: "float32"}}
	if s.half {
		s.inputs[0].Type = "float16"
	}
	s.modelBatch, s.c, s.h, s.w = in.Shape[0], int(c), int(h), int(w)
	s.maxBatch = max(maxBatch, 1)
	if s.modelBatch > 0 {
		s.maxBatch = int(s.modelBatch)
	}
	batchSym := ""
	if len(in.Symbols) > 0 {
		batchSym = in.Symbols[0]
	}
	names := make([]string, len(s.sess.Outputs))
	for i, o := range s.sess.Outputs {
		if o.Type != ort.Float32 {
			return fmt.Errorf("infer: %s: output %q is %s, unsupported: vinfer decodes float32 outputs",
				s.name, o.Name, ort.TypeName(o.Type))
		}
		s.outputs = append(s.outputs, tensor.Info{Name: o.Name, Shape: o.Shape, Type: "float32"})
		names[i] = o.Name
		s.outs = append(s.outs, classify(o, s.modelBatch, batchSym))
	}
	var err error
	if s.cpu, err = ort.NewCPUMemoryInfo(); err != nil {
		return err
	}
	s.inNames = ort.NewNames([]string{in.Name})
	s.outNames = ort.NewNames(names)
	if !s.half {
		if err := s.allocInput(0); err != nil {
			return err
		}
	}
	for i := range s.outs {
		o := &s.outs[i]
		m := o.elems
		if o.kind == outBatched {
			m *= s.maxBatch
		}
		if o.kind != outDynamic && m > 0 {
			if o.ptr = ort.Alloc(4 * m); o.ptr == nil {
				return fmt.Errorf("infer: %s: cannot allocate the %d-byte buffer of output %q", s.name, 4*m, names[i])
			}
		}
	}
	for set := range s.runs {
		s.runs[set] = make([]*batchRun, s.maxBatch+1)
	}
	return nil
}

// allocInput allocates input set set's native buffer.
func (s *Session) allocInput(set int) error {
	n := s.maxBatch * s.c * s.h * s.w
	p := ort.Alloc(4 * n)
	if p == nil {
		return fmt.Errorf("infer: %s: cannot allocate the %d-byte input buffer", s.name, 4*n)
	}
	s.in[set] = unsafe.Slice((*float32)(p), n)
	return nil
}

// classify decides how an output is buffered. Its dim 0 is the batch when the input's batch is
// dynamic and the symbolic names agree (or either is unnamed).
func classify(o ort.IOInfo, modelBatch int64, batchSym string) outputBuf {
	if n := tensor.Elements(o.Shape); n >= 0 {
		return outputBuf{kind: outFixed, elems: int(n)}
	}
	if modelBatch < 0 && len(o.Shape) > 0 && o.Shape[0] < 0 {
		sym := o.Symbols[0]
		if n := tensor.Elements(o.Shape[1:]); n >= 0 && (sym == "" || batchSym == "" || sym == batchSym) {
			return outputBuf{kind: outBatched, elems: int(n)}
		}
	}
	return outputBuf{kind: outDynamic}
}

// Inputs describes the model input: one [N,C,H,W] float32 tensor, N being the model's fixed
// batch (1 for the bundled models) or -1 when dynamic.
func (s *Session) Inputs() []tensor.Info { return s.inputs }

// Outputs describes the model outputs as the model declares them (dynamic dims -1).
func (s *Session) Outputs() []tensor.Info { return s.outputs }

// NHWC reports an input laid out [N,H,W,C] (channels last): Input's slots hold H·W pixels of C
// interleaved values each.
func (s *Session) NHWC() bool { return s.nhwc }

// InputSize returns the input's width and height in pixels.
func (s *Session) InputSize() (w, h int) { return s.w, s.h }

// ModelBatch returns the model's batch dimension: > 0 when fixed, -1 when dynamic.
func (s *Session) ModelBatch() int { return int(s.modelBatch) }

// MaxBatch returns the largest batch Run accepts (the fixed batch of a fixed-batch model).
func (s *Session) MaxBatch() int { return s.maxBatch }

// checkBatch returns nil when Run accepts batch; it allocates only on failure.
func (s *Session) checkBatch(batch int) error {
	switch {
	case s.sess == nil:
		return fmt.Errorf("infer: %s: session is closed", s.name)
	case s.modelBatch > 0 && batch != int(s.modelBatch):
		return fmt.Errorf("infer: %s: batch %d, but the model's batch is fixed at %d", s.name, batch, s.modelBatch)
	case batch < 1 || batch > s.maxBatch:
		return fmt.Errorf("infer: %s: batch %d outside 1…%d (Config.MaxBatch)", s.name, batch, s.maxBatch)
	}
	return nil
}

// ErrHalfInput: a model whose input is float16 (onnxedit.FP16Options.HalfInput) runs on device
// memory only (DeviceRun), fed by a kernel that writes float16; Input and Run refuse it.
var ErrHalfInput = errors.New("the input is float16: bind device memory (DeviceRun)")

// InputHalf reports whether the model's input is float16 (DeviceRun's input then holds 2
// bytes per value).
func (s *Session) InputHalf() bool { return s.half }

// Input returns the [batch,C,H,W] float32 input buffer for a run of batch images: image b is
// in[b·C·H·W : (b+1)·C·H·W]. It is native memory, zeroed at Open and reused by every run (the
// buffers of all batch sizes share it). It fails when Run would reject batch. It is InputSet(0,
// batch).
func (s *Session) Input(batch int) ([]float32, error) { return s.InputSet(0, batch) }

// InputSet is Input for input set set, 0 ≤ set < InputSets; RunSet runs it. A set's buffer is
// allocated (zeroed) on its first use.
func (s *Session) InputSet(set, batch int) ([]float32, error) {
	if err := s.checkBatch(batch); err != nil {
		return nil, err
	}
	if set < 0 || set >= InputSets {
		return nil, fmt.Errorf("infer: %s: input set %d outside 0…%d", s.name, set, InputSets-1)
	}
	if s.half {
		return nil, fmt.Errorf("infer: %s: %w", s.name, ErrHalfInput)
	}
	if s.in[set] == nil {
		if err := s.allocInput(set); err != nil {
			return nil, err
		}
	}
	return s.in[set][:batch*s.c*s.h*s.w], nil
}

// Run infers the batch written into Input(batch) and returns the outputs, in the order of
// Outputs, with their actual shapes (dim 0 = batch where it is the batch). The tensors and
// their data are views of native buffers, valid until the next Run (of any set) or Close; the
// caller reads them and must not modify the slices or shapes (they are reused). After the
// first Run of a batch size, Run makes no Go heap allocation. It is RunSet(0, batch).
func (s *Session) Run(batch int) ([]tensor.Tensor, error) { return s.RunSet(0, batch) }

// RunSet is Run of the batch written into InputSet(set, batch).
func (s *Session) RunSet(set, batch int) ([]tensor.Tensor, error) {
	if err := s.checkBatch(batch); err != nil {
		return nil, err
	}
	if s.half {
		return nil, fmt.Errorf("infer: %s: %w", s.name, ErrHalfInput)
	}
	if set < 0 || set >= InputSets || s.in[set] == nil {
		return nil, fmt.Errorf("infer: %s: input set %d was never written (InputSet)", s.name, set)
	}
	r := s.runs[set][batch]
	fresh := r == nil
	if fresh {
		var err error
		if r, err = s.prepare(set, batch); err != nil {
			return nil, err
		}
		s.runs[set][batch] = r
	}
	if s.last != nil {
		s.last.releaseDynamic(s.outs)
	}
	s.last = r
	if err := s.sess.Run(s.inNames, r.inArr, s.outNames, r.outArr); err != nil {
		return nil, fmt.Errorf("infer: %s: run of batch %d: %w", s.name, batch, err)
	}
	if fresh {
		sigstack.Fix() // an execution provider may set up signal handlers at a shape's first run
	}
	for i, o := range s.outs {
		if o.kind != outDynamic {
			continue
		}
		v := r.outArr.At(i)
		shape, err := v.Shape(r.views[i].Shape)
		if err != nil {
			return nil, fmt.Errorf("infer: %s: output %q: %w", s.name, s.outputs[i].Name, err)
		}
		data, err := v.Data()
		if err != nil {
			return nil, fmt.Errorf("infer: %s: output %q: %w", s.name, s.outputs[i].Name, err)
		}
		r.views[i].Shape = shape
		r.views[i].Data = nil
		if n := tensor.Elements(shape); n > 0 {
			r.views[i].Data = unsafe.Slice((*float32)(data), n)
		}
	}
	return r.views, nil
}

// prepare creates the values of one input set and batch size over the shared buffers.
func (s *Session) prepare(set, batch int) (*batchRun, error) {
	r := &batchRun{inArr: ort.NewValues(1), outArr: ort.NewValues(len(s.outs))}
	fail := func(err error) (*batchRun, error) {
		r.release()
		return nil, fmt.Errorf("infer: %s: buffers for batch %d: %w", s.name, batch, err)
	}
	shape := []int64{int64(batch), int64(s.c), int64(s.h), int64(s.w)}
	if s.nhwc {
		shape = []int64{int64(batch), int64(s.h), int64(s.w), int64(s.c)}
	}
	var err error
	if r.in, err = ort.NewTensor(s.cpu, unsafe.Pointer(&s.in[set][0]), 4*batch*s.c*s.h*s.w, ort.Float32, shape); err != nil {
		return fail(err)
	}
	r.inArr.Set(0, r.in)
	r.outs = make([]*ort.Value, len(s.outs))
	r.views = make([]tensor.Tensor, len(s.outs))
	for i, o := range s.outs {
		info := s.outputs[i]
		shape := append([]int64(nil), info.Shape...)
		r.views[i] = tensor.Tensor{Info: tensor.Info{Name: info.Name, Type: info.Type, Shape: shape}}
		n := o.elems
		switch o.kind {
		case outDynamic:
			continue
		case outBatched:
			shape[0] = int64(batch)
			n *= batch
		}
		if n == 0 {
			return fail(fmt.Errorf("output %q has shape %v with no elements", info.Name, shape))
		}
		if r.outs[i], err = ort.NewTensor(s.cpu, o.ptr, 4*n, ort.Float32, shape); err != nil {
			return fail(err)
		}
		r.outArr.Set(i, r.outs[i])
		r.views[i].Data = unsafe.Slice((*float32)(o.ptr), n)
	}
	return r, nil
}

// releaseDynamic frees the ONNX Runtime-allocated outputs of the latest run.
func (r *batchRun) releaseDynamic(outs []outputBuf) {
	for i, o := range outs {
		if o.kind == outDynamic {
			r.outArr.ReleaseAt(i)
		}
	}
}

func (r *batchRun) release() {
	r.inArr.Release()
	r.outArr.Release() // frees ONNX Runtime-allocated outputs
	r.in.Release()
	for _, v := range r.outs {
		v.Release()
	}
}

// Close frees the session and its buffers; tensors from Run become invalid. Idempotent.
func (s *Session) Close() {
	for set := range s.runs {
		for _, r := range s.runs[set] {
			if r != nil {
				r.release()
			}
		}
		s.runs[set] = nil
	}
	s.last = nil
	s.inNames.Release()
	s.outNames.Release()
	s.cpu.Release()
	s.sess.Release()
	s.sess = nil
	for set, in := range s.in {
		if in != nil {
			ort.Free(unsafe.Pointer(&in[0]))
			s.in[set] = nil
		}
	}
	for i := range s.outs {
		if s.outs[i].ptr != nil {
			ort.Free(s.outs[i].ptr)
			s.outs[i].ptr = nil
		}
	}
}
