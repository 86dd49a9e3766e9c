package infer

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"unsafe"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/internal/ort"
	"github.com/vinfer/vinfer/internal/sigstack"
)

// CUDA execution provider: ONNX Runtime's CUDA EP loaded as a plugin EP library
// (RegisterExecutionProviderLibrary, GetEpDevices, SessionOptionsAppendExecutionProvider_V2),
// which works with a CPU build of the ONNX Runtime core (../shared/gpu/README.md).

// CUDAEPLibraryEnv names the environment variable holding the CUDA EP plugin library's path.
const CUDAEPLibraryEnv = "VINFER_ORT_CUDA_EP"

// DefaultCUDAEPLibrary is where the GPU machine's set-up puts the plugin library.
const DefaultCUDAEPLibrary = "/opt/vinfer-gpu/libonnxruntime_providers_cuda.so"

func init() { RegisterProvider(ProviderCUDA, cudaProvider) }

// CUDAEPLibrary returns the plugin library used for ProviderCUDA: $VINFER_ORT_CUDA_EP, else
// libonnxruntime_providers_cuda.so beside the loaded ONNX Runtime core, else
// DefaultCUDAEPLibrary.
func CUDAEPLibrary() string {
	if p := os.Getenv(CUDAEPLibraryEnv); p != "" {
		return p
	}
	if core := ort.Loaded(); core != "" {
		p := filepath.Join(filepath.Dir(core), "libonnxruntime_providers_cuda.so")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return DefaultCUDAEPLibrary
}

var cudaRegistered struct {
	sync.Mutex
	envs map[*ort.Env]bool
}

// registerCUDA registers the plugin library in env once.
func registerCUDA(env *ort.Env) error {
	cudaRegistered.Lock()
	defer cudaRegistered.Unlock()
	if cudaRegistered.envs[env] {
		return nil
	}
	path := CUDAEPLibrary()
	var err error
	if _, serr := os.Stat(path); serr != nil {
		err = fmt.Errorf("%w: CUDA EP plugin library %s not found (set %s)", ErrProviderUnavailable, path, CUDAEPLibraryEnv)
	} else if rerr := env.RegisterExecutionProviderLibrary("cuda", path); rerr != nil {
		err = fmt.Errorf("%w: %v", ErrProviderUnavailable, rerr)
	}
	if err != nil {
		return err // not remembered: the library may be installed later
	}
	if cudaRegistered.envs == nil {
		cudaRegistered.envs = map[*ort.Env]bool{}
	}
	cudaRegistered.envs[env] = true
	return nil
}

// cudaProvider appends the CUDA EP device cfg.Device with cfg.ProviderOptions. The chosen EP
// device fixes the GPU: "device_id" in the options is redundant (ORT warns about it).
func cudaProvider(env *ort.Env, opts *ort.SessionOptions, cfg *Config) error {
	if err := registerCUDA(env); err != nil {
		return err
	}
	devs, err := env.EpDevices()
	if err != nil {
		return err
	}
	d, err := pickCUDADevice(devs, cfg.Device)
	if err != nil {
		return err
	}
	return opts.AppendExecutionProvider(env, []ort.EpDevice{d}, cfg.ProviderOptions)
}

// pickCUDADevice returns the ordinal-th CUDAExecutionProvider device, in the order ONNX Runtime
// lists them (the CUDA device order).
func pickCUDADevice(devs []ort.EpDevice, ordinal int) (ort.EpDevice, error) {
	n := 0
	for _, d := range devs {
		if d.EpName != "CUDAExecutionProvider" {
			continue
		}
		if n == ordinal {
			return d, nil
		}
		n++
	}
	return ort.EpDevice{}, fmt.Errorf("%w: no CUDAExecutionProvider device %d (%d found)", ErrProviderUnavailable, ordinal, n)
}

// StreamOptions returns the CUDA EP options that make ONNX Runtime queue its work on s (the
// worker's stream, in the device's primary context), so that preprocessing kernels, inference
// and the output copy are ordered on one stream without host synchronization.
func StreamOptions(s *cuda.Stream) map[string]string {
	return map[string]string{
		"has_user_compute_stream": "1",
		"user_compute_stream":     strconv.FormatUint(uint64(s.Handle()), 10),
	}
}

// DeviceRun runs a Session on device memory through IoBinding: the input [n,C,H,W] float32
// (float16 for a model whose input is: Session.InputHalf) is
// read from the caller's buffer (a preprocess/gpu batch tensor) and every output is written
// into the caller's buffers, so ONNX Runtime copies nothing between host and device. OrtValues
// for every batch size are created once; Run allocates nothing. A DeviceRun belongs to one
// worker, like its Session.
type DeviceRun struct {
	s       *Session
	mem     *ort.MemoryInfo
	bind    *ort.IoBinding
	in      []*ort.Value   // by batch size
	outs    [][]*ort.Value // by batch size, then output
	perItem []int          // output bytes per batch item (batched) or in total (fixed)
	batched []bool
	queue   *ort.RunOptions // run options of Queue: no wait for the provider's stream
	ran     []bool          // by batch size: run once (sigstack.Fix done after it)
}

// NewDeviceRun binds s to CUDA device memory of GPU device: input holds MaxBatch input items,
// outputs[i] room for MaxBatch items of output i (OutputBytes). Outputs whose size depends on
// the data are not supported (they would need ONNX Runtime's allocator).
func (s *Session) NewDeviceRun(device int, input cuda.Ptr, outputs []cuda.Ptr) (*DeviceRun, error) {
	mem, err := ort.NewCUDAMemoryInfo(device)
	if err != nil {
		return nil, err
	}
	ptrs := make([]unsafe.Pointer, len(outputs))
	for i, p := range outputs {
		ptrs[i] = devicePointer(p)
	}
	return s.newBoundRun(mem, devicePointer(input), ptrs)
}

// devicePointer turns a device address into the pointer type ONNX Runtime's C API takes; the
// address is never dereferenced on the host.
func devicePointer(p cuda.Ptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }

// newBoundRun is NewDeviceRun for memory described by mem (host memory in tests).
func (s *Session) newBoundRun(mem *ort.MemoryInfo, input unsafe.Pointer, outputs []unsafe.Pointer) (*DeviceRun, error) {
	if len(outputs) != len(s.outs) {
		mem.Release()
		return nil, fmt.Errorf("infer: %s has %d outputs, %d buffers given", s.name, len(s.outs), len(outputs))
	}
	r := &DeviceRun{s: s, mem: mem}
	for i, o := range s.outs {
		if o.kind == outDynamic {
			r.Release()
			return nil, fmt.Errorf("infer: %s: output %q has data-dependent dimensions; bind it on the host", s.name, s.outputs[i].Name)
		}
		r.perItem = append(r.perItem, 4*o.elems)
		r.batched = append(r.batched, o.kind == outBatched)
	}
	var err error
	if r.bind, err = s.sess.NewIoBinding(); err != nil {
		r.Release()
		return nil, err
	}
	if r.queue, err = ort.NewRunOptions(ort.RunDisableSyncProviders, "1"); err != nil {
		r.Release()
		return nil, err
	}
	item := s.c * s.h * s.w
	elem, size := ort.Float32, 4
	if s.half {
		elem, size = ort.Float16, 2
	}
	r.in = make([]*ort.Value, s.maxBatch+1)
	r.ran = make([]bool, s.maxBatch+1)
	r.outs = make([][]*ort.Value, s.maxBatch+1)
	for n := 1; n <= s.maxBatch; n++ {
		shape := []int64{int64(n), int64(s.c), int64(s.h), int64(s.w)}
		if r.in[n], err = ort.NewTensor(mem, input, size*n*item, elem, shape); err != nil {
			r.Release()
			return nil, err
		}
		for i, info := range s.outputs {
			oshape := append([]int64(nil), info.Shape...)
			bytes := r.perItem[i]
			if r.batched[i] {
				oshape[0] = int64(n)
				bytes *= n
			}
			v, err := ort.NewTensor(mem, outputs[i], bytes, ort.Float32, oshape)
			if err != nil {
				r.Release()
				return nil, err
			}
			r.outs[n] = append(r.outs[n], v)
		}
	}
	return r, nil
}

// OutputBytes returns the bytes output i takes for a batch of n.
func (r *DeviceRun) OutputBytes(i, n int) int {
	if r.batched[i] {
		return n * r.perItem[i]
	}
	return r.perItem[i]
}

// Run runs the model on the first n input items; outputs are written to the bound buffers.
// With the session on the worker's stream (StreamOptions) the results are ordered before
// later work on that stream.
func (r *DeviceRun) Run(n int) error {
	if err := r.bindBatch(n); err != nil {
		return err
	}
	if err := r.bind.Run(); err != nil {
		return err
	}
	r.ranOnce(n)
	return nil
}

// ranOnce moves signal handlers that CUDA may have set up at batch size n's first run onto
// the signal stack (sigstack).
func (r *DeviceRun) ranOnce(n int) {
	if !r.ran[n] {
		r.ran[n] = true
		sigstack.Fix()
	}
}

// bindBatch binds the input and output values for a batch of n.
func (r *DeviceRun) bindBatch(n int) error {
	if err := r.s.checkBatch(n); err != nil {
		return err
	}
	if err := r.bind.BindInput(r.s.inputs[0].Name, r.in[n]); err != nil {
		return err
	}
	for i, v := range r.outs[n] {
		if err := r.bind.BindOutput(r.s.outputs[i].Name, v); err != nil {
			return err
		}
	}
	return nil
}

// Queue is Run without waiting: it returns once the run is queued on the session's stream
// (run option disable_synchronize_execution_providers), so the caller can prepare the next batch
// while the GPU works. The outputs are valid once that stream reaches this point (an event
// recorded on it, or its synchronization). Only for a session on the caller's stream
// (StreamOptions).
func (r *DeviceRun) Queue(n int) error {
	if err := r.bindBatch(n); err != nil {
		return err
	}
	if err := r.bind.RunWith(r.queue); err != nil {
		return err
	}
	r.ranOnce(n)
	return nil
}

// UseGraph makes Queue replay CUDA graph id (the session needs the CUDA EP option
// enable_cuda_graph=1). Each DeviceRun of a session binding other buffers needs its own id:
// a captured graph replays fixed addresses.
func (r *DeviceRun) UseGraph(id int) error {
	return r.queue.Set(ort.RunGraphID, strconv.Itoa(id))
}

// Release frees the binding and its values (not the caller's buffers). Idempotent.
func (r *DeviceRun) Release() {
	for _, v := range r.in {
		v.Release()
	}
	for _, vs := range r.outs {
		for _, v := range vs {
			v.Release()
		}
	}
	r.in, r.outs = nil, nil
	r.queue.Release()
	if r.bind != nil {
		r.bind.Release()
		r.bind = nil
	}
	r.mem.Release()
}
