package ort

/*
#include "ort.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// MemoryInfo says where tensor memory lives (CPU, or a CUDA device).
type MemoryInfo struct{ p *C.OrtMemoryInfo }

// NewCPUMemoryInfo describes ordinary host memory.
func NewCPUMemoryInfo() (*MemoryInfo, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	var m MemoryInfo
	if err := check("CreateCpuMemoryInfo", C.vort_create_cpu_memory_info(&m.p)); err != nil {
		return nil, err
	}
	return &m, nil
}

// NewCUDAMemoryInfo describes device memory of CUDA device ordinal ("Cuda", OrtDeviceAllocator,
// OrtMemTypeDefault).
func NewCUDAMemoryInfo(device int) (*MemoryInfo, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	cs := C.CString("Cuda")
	defer C.free(unsafe.Pointer(cs))
	var m MemoryInfo
	if err := check("CreateMemoryInfo Cuda", C.vort_create_memory_info(cs, 0, C.int(device), 0, &m.p)); err != nil {
		return nil, err
	}
	return &m, nil
}

// Release frees the memory info.
func (m *MemoryInfo) Release() {
	if m != nil && m.p != nil {
		C.vort_release_memory_info(m.p)
		m.p = nil
	}
}

// Value is an ORT tensor over memory the caller owns and keeps alive until Release.
type Value struct {
	p     *C.OrtValue
	Shape []int64
}

// NewTensor wraps native memory at data (bytes long: host memory from Alloc, or a device
// pointer with a CUDA MemoryInfo) as a tensor of elem type and shape. data must not be Go heap
// memory: ORT keeps the pointer.
func NewTensor(m *MemoryInfo, data unsafe.Pointer, bytes int, elem int, shape []int64) (*Value, error) {
	if len(shape) == 0 || len(shape) > 8 {
		return nil, fmt.Errorf("ort: tensor rank %d unsupported", len(shape))
	}
	var dims [8]C.int64_t
	for i, d := range shape {
		dims[i] = C.int64_t(d)
	}
	v := Value{Shape: append([]int64(nil), shape...)}
	if err := check("CreateTensorWithDataAsOrtValue", C.vort_create_tensor(m.p, data, C.size_t(bytes),
		&dims[0], C.size_t(len(shape)), C.int(elem), &v.p)); err != nil {
		return nil, err
	}
	return &v, nil
}

// TensorShape returns the value's current shape.
func (v *Value) TensorShape() ([]int64, error) {
	var dims [8]C.int64_t
	nd := C.size_t(len(dims))
	if err := check("GetTensorTypeAndShape", C.vort_tensor_shape(v.p, &dims[0], &nd)); err != nil {
		return nil, err
	}
	out := make([]int64, nd)
	for i := range out {
		out[i] = int64(dims[i])
	}
	return out, nil
}

// Data returns the tensor's data pointer.
func (v *Value) Data() (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := check("GetTensorMutableData", C.vort_tensor_data(v.p, &p))
	return p, err
}

// Release frees the value (not the memory it wraps).
func (v *Value) Release() {
	if v != nil && v.p != nil {
		C.vort_release_value(v.p)
		v.p = nil
	}
}

// Alloc returns n bytes of 64-byte aligned, zeroed native memory; free with Free.
func Alloc(n int) unsafe.Pointer {
	var p unsafe.Pointer
	if C.posix_memalign(&p, 64, C.size_t(n)) != 0 {
		return nil
	}
	C.memset(p, 0, C.size_t(n))
	return p
}

// Free frees memory from Alloc.
func Free(p unsafe.Pointer) { C.free(p) }

// IoBinding binds inputs and outputs (host or device memory) to a session for RunWithBinding.
type IoBinding struct {
	p *C.OrtIoBinding
	s *Session
}

// NewIoBinding creates a binding for s.
func (s *Session) NewIoBinding() (*IoBinding, error) {
	b := IoBinding{s: s}
	if err := check("CreateIoBinding", C.vort_create_io_binding(s.p, &b.p)); err != nil {
		return nil, err
	}
	return &b, nil
}

// BindInput binds the named input to v.
func (b *IoBinding) BindInput(name string, v *Value) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return check("BindInput "+name, C.vort_bind_input(b.p, cs, v.p))
}

// BindOutput binds the named output to preallocated v.
func (b *IoBinding) BindOutput(name string, v *Value) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return check("BindOutput "+name, C.vort_bind_output(b.p, cs, v.p))
}

// BindOutputToDevice lets ORT allocate the named output on m's device.
func (b *IoBinding) BindOutputToDevice(name string, m *MemoryInfo) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return check("BindOutputToDevice "+name, C.vort_bind_output_to_device(b.p, cs, m.p))
}

// Run runs the session with the bound inputs and outputs.
func (b *IoBinding) Run() error { return check("RunWithBinding", C.vort_run_with_binding(b.s.p, b.p)) }

// Clear unbinds all inputs and outputs.
func (b *IoBinding) Clear() { C.vort_clear_bound(b.p) }

// Release frees the binding.
func (b *IoBinding) Release() {
	if b != nil && b.p != nil {
		C.vort_release_io_binding(b.p)
		b.p = nil
	}
}
