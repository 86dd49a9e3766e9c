package cuda

/*
#include "driver.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Device attributes (CUdevice_attribute).
const (
	attrMultiprocessorCount = 16
	attrComputeMajor        = 75
	attrComputeMinor        = 76
	attrMemoryPools         = 115
)

// Device is one GPU with its retained primary context. Open returns the same *Device to every
// caller for an ordinal; it is safe for concurrent use.
type Device struct {
	ordinal int
	dev     C.CUdevice
	ctx     C.CUcontext
	name    string
	// ComputeMajor and ComputeMinor are the compute capability (9.0 on Hopper).
	ComputeMajor, ComputeMinor int
	// Multiprocessors is the number of SMs.
	Multiprocessors int
	// TotalMemory in bytes.
	TotalMemory uint64
	// MemoryPools reports support for stream-ordered allocation (cuMemAllocAsync).
	MemoryPools bool

	refs int // guarded by devicesMu
}

var (
	devicesMu sync.Mutex
	devices   = map[int]*Device{}
)

// Open initializes the driver and returns device ordinal's shared handle, retaining its primary
// context the first time (cuDevicePrimaryCtxRetain). Each Open must be matched by a Close; the
// primary context is released with the last Close. Call it at start-up (a warm-up), not on the
// frame path: retaining a context takes the driver's global lock and ~100 ms on first use.
func Open(ordinal int) (*Device, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	devicesMu.Lock()
	defer devicesMu.Unlock()
	if d := devices[ordinal]; d != nil {
		d.refs++
		return d, nil
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.vf_cuDeviceGetCount(&n)); err != nil {
		return nil, err
	}
	if ordinal < 0 || ordinal >= int(n) {
		if n == 0 {
			return nil, ErrNoDevice
		}
		return nil, fmt.Errorf("cuda: device %d does not exist (%d visible)", ordinal, int(n))
	}
	d := &Device{ordinal: ordinal, refs: 1}
	if err := check("cuDeviceGet", C.vf_cuDeviceGet(&d.dev, C.int(ordinal))); err != nil {
		return nil, err
	}
	var name [256]C.char
	if err := check("cuDeviceGetName", C.vf_cuDeviceGetName(&name[0], 256, d.dev)); err != nil {
		return nil, err
	}
	d.name = C.GoString(&name[0])
	d.ComputeMajor = d.attr(attrComputeMajor)
	d.ComputeMinor = d.attr(attrComputeMinor)
	d.Multiprocessors = d.attr(attrMultiprocessorCount)
	d.MemoryPools = d.attr(attrMemoryPools) != 0
	var total C.size_t
	if err := check("cuDeviceTotalMem", C.vf_cuDeviceTotalMem(&total, d.dev)); err != nil {
		return nil, err
	}
	d.TotalMemory = uint64(total)
	if err := check("cuDevicePrimaryCtxRetain", C.vf_cuDevicePrimaryCtxRetain(&d.ctx, d.dev)); err != nil {
		return nil, err
	}
	counters.retains.Add(1)
	devices[ordinal] = d
	return d, nil
}

func (d *Device) attr(a int) int {
	var v C.int
	if C.vf_cuDeviceGetAttribute(&v, C.int(a), d.dev) != 0 {
		return 0
	}
	return int(v)
}

// Close drops one reference; the last one releases the primary context. Every stream, buffer
// and module of the device must be destroyed first.
func (d *Device) Close() error {
	devicesMu.Lock()
	defer devicesMu.Unlock()
	if d.refs <= 0 {
		return fmt.Errorf("cuda: device %d closed more often than opened", d.ordinal)
	}
	d.refs--
	if d.refs > 0 {
		return nil
	}
	delete(devices, d.ordinal)
	return check("cuDevicePrimaryCtxRelease", C.vf_cuDevicePrimaryCtxRelease(d.dev))
}

// Ordinal returns the device index as the driver numbers it (after CUDA_VISIBLE_DEVICES).
func (d *Device) Ordinal() int { return d.ordinal }

// Name returns the product name ("NVIDIA H200").
func (d *Device) Name() string { return d.name }

// Context returns the primary context as a CUcontext value, for libraries that take one
// (FFmpeg's AVCUDADeviceContext.cuda_ctx).
func (d *Device) Context() uintptr { return uintptr(unsafe.Pointer(d.ctx)) }

// Bind makes the device's context current on the calling OS thread and locks the calling
// goroutine to that thread (runtime.LockOSThread), the one place vinfer locks threads for the
// GPU: a decoder or inference worker binds once for its life and undoes it with Unbind (or
// exits locked, which ends the thread). Prefer RunLocked.
func (d *Device) Bind() error {
	runtime.LockOSThread()
	if err := check("cuCtxSetCurrent", C.vf_cuCtxSetCurrent(d.ctx)); err != nil {
		runtime.UnlockOSThread()
		return err
	}
	threadLocalCapture()
	return nil
}

// threadLocalCapture sets the calling thread's stream capture mode to thread-local
// (cuThreadExchangeStreamCaptureMode): ONNX Runtime captures CUDA graphs in the global mode,
// which would otherwise forbid every other thread's synchronizing calls (an inference lane
// waiting for its batch, NVDEC, allocations) while one session warms up, e.g. during a hot
// reload.
func threadLocalCapture() {
	mode := C.int(1) // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL
	C.vf_cuThreadExchangeStreamCaptureMode(&mode)
}

// Unbind unlocks the calling goroutine from its thread after Bind.
func (d *Device) Unbind() { runtime.UnlockOSThread() }

// RunLocked runs fn on the calling goroutine locked to its OS thread with the device's context
// current, set once before fn starts: the shape of a GPU worker's loop. It returns fn's error.
func (d *Device) RunLocked(fn func() error) error {
	if err := d.Bind(); err != nil {
		return err
	}
	defer d.Unbind()
	return fn()
}

// with runs a setup call (allocation, stream or module creation) with the context current on
// the calling thread.
func (d *Device) with(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	threadLocalCapture()
	var cur C.CUcontext
	if err := check("cuCtxGetCurrent", C.vf_cuCtxGetCurrent(&cur)); err != nil {
		return err
	}
	if cur != d.ctx {
		if err := check("cuCtxSetCurrent", C.vf_cuCtxSetCurrent(d.ctx)); err != nil {
			return err
		}
	}
	return fn()
}

// MemInfo returns the device's free and total memory in bytes (cuMemGetInfo).
func (d *Device) MemInfo() (free, total uint64, err error) {
	err = d.with(func() error {
		var f, t C.size_t
		if err := check("cuMemGetInfo", C.vf_cuMemGetInfo(&f, &t)); err != nil {
			return err
		}
		free, total = uint64(f), uint64(t)
		return nil
	})
	return free, total, err
}

// Synchronize waits for all work on the device's context (cuCtxSynchronize).
func (d *Device) Synchronize() error {
	return d.with(func() error { return check("cuCtxSynchronize", C.vf_cuCtxSynchronize()) })
}

// String describes the device ("cuda:0 NVIDIA H200 (sm_90, 132 SMs, 141 GiB)").
func (d *Device) String() string {
	return fmt.Sprintf("cuda:%d %s (sm_%d%d, %d SMs, %d GiB)", d.ordinal, d.name, d.ComputeMajor,
		d.ComputeMinor, d.Multiprocessors, d.TotalMemory>>30)
}

// OwnContext is a context created with cuCtxCreate, separate from the primary context. vinfer
// never uses one on its pipeline; it exists so that benchmarks can measure the cost of the
// per-worker-context pattern that the primary context replaces.
type OwnContext struct{ ctx C.CUcontext }

// CreateOwnContext creates a new context on d and makes it current on the calling thread.
func (d *Device) CreateOwnContext() (*OwnContext, error) {
	var c C.CUcontext
	if err := check("cuCtxCreate", C.vf_cuCtxCreate(&c, 0, d.dev)); err != nil {
		return nil, err
	}
	return &OwnContext{ctx: c}, nil
}

// Destroy destroys the context.
func (c *OwnContext) Destroy() error { return check("cuCtxDestroy", C.vf_cuCtxDestroy(c.ctx)) }
