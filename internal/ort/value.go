package ort

/*
#include <string.h>
#include "ort.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Allocator types and memory types for NewMemoryInfo (OrtAllocatorType, OrtMemType).
const (
	DeviceAllocator = 0
	ArenaAllocator  = 1

	MemTypeCPUInput  = -2 // CPU memory a non-CPU provider reads as input
	MemTypeCPUOutput = -1 // CPU memory a non-CPU provider writes as output (e.g. pinned memory)
	MemTypeDefault   = 0  // the device's own memory
)

// MemoryInfo says where tensor memory lives (OrtMemoryInfo).
type MemoryInfo struct{ p *C.OrtMemoryInfo }

// NewCPUMemoryInfo describes ordinary host memory (CreateCpuMemoryInfo, arena allocator,
// default memory type).
func NewCPUMemoryInfo() (*MemoryInfo, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	var m MemoryInfo
	if err := check(C.vort_create_cpu_memory_info(&m.p), "CreateCpuMemoryInfo", ""); err != nil {
		return nil, err
	}
	return &m, nil
}

// NewMemoryInfo describes memory of an allocator by name ("Cpu", "Cuda", "CudaPinned", …),
// allocator type, device ordinal and memory type (CreateMemoryInfo).
func NewMemoryInfo(name string, allocator, device, memType int) (*MemoryInfo, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	var m MemoryInfo
	if err := check(C.vort_create_memory_info(cs, C.int(allocator), C.int(device), C.int(memType), &m.p),
		"CreateMemoryInfo", name); err != nil {
		return nil, err
	}
	return &m, nil
}

// NewCUDAMemoryInfo describes device memory of CUDA device ordinal device ("Cuda",
// DeviceAllocator, MemTypeDefault): tensors over cuMemAlloc'ed pointers, outputs bound with
// IoBinding.BindOutputToDevice.
func NewCUDAMemoryInfo(device int) (*MemoryInfo, error) {
	return NewMemoryInfo("Cuda", DeviceAllocator, device, MemTypeDefault)
}

// Release frees the memory info; values created with it stay valid. Idempotent.
func (m *MemoryInfo) Release() {
	if m != nil && m.p != nil {
		C.vort_release_memory_info(m.p)
		m.p = nil
	}
}

// Value is an ONNX Runtime value (OrtValue), here always a tensor. A Value from NewTensor
// wraps memory the caller owns and must keep alive, unchanged in place, until Release.
type Value struct{ p *C.OrtValue }

// NewTensor wraps bytes of memory at data as a tensor of element type elem (Float32 …) and
// shape, described by m (host memory from Alloc with a CPU MemoryInfo, or a device pointer
// with a CUDA one) (CreateTensorWithDataAsOrtValue). data must not point into the Go heap:
// ONNX Runtime keeps the pointer. bytes must hold at least ∏shape elements.
func NewTensor(m *MemoryInfo, data unsafe.Pointer, bytes int, elem int, shape []int64) (*Value, error) {
	if data == nil {
		return nil, fmt.Errorf("ort: CreateTensorWithDataAsOrtValue: nil data")
	}
	dims := (*C.int64_t)(C.calloc(C.size_t(len(shape)+1), 8))
	defer C.free(unsafe.Pointer(dims))
	for i, d := range shape {
		unsafe.Slice(dims, len(shape))[i] = C.int64_t(d)
	}
	var v Value
	if err := check(C.vort_create_tensor(m.p, data, C.size_t(bytes), dims, C.size_t(len(shape)), C.int(elem), &v.p),
		"CreateTensorWithDataAsOrtValue", fmt.Sprint(shape)); err != nil {
		return nil, err
	}
	return &v, nil
}

// IsNil reports whether v holds no value (an empty Values slot).
func (v Value) IsNil() bool { return v.p == nil }

// Shape writes the tensor's current shape into dst (grown if too short) and returns it. With a
// dst of sufficient capacity it allocates nothing on the Go heap.
func (v Value) Shape(dst []int64) ([]int64, error) {
	dst = dst[:cap(dst)]
	var dims *C.int64_t
	if len(dst) > 0 {
		dims = (*C.int64_t)(unsafe.Pointer(&dst[0]))
	}
	r := C.vort_value_shape(v.p, dims, C.size_t(len(dst)))
	if err := check(r.status, "GetTensorTypeAndShape", ""); err != nil {
		return dst[:0], err
	}
	if int(r.ndims) > len(dst) {
		return v.Shape(make([]int64, int(r.ndims)))
	}
	return dst[:r.ndims], nil
}

// ElementType returns the tensor's element type (Float32 …).
func (v Value) ElementType() (int, error) {
	r := C.vort_value_shape(v.p, nil, 0)
	return int(r.elem), check(r.status, "GetTensorTypeAndShape", "")
}

// Data returns the address of the tensor's data (host or device memory, per its MemoryInfo)
// (GetTensorMutableData).
func (v Value) Data() (unsafe.Pointer, error) {
	r := C.vort_value_data(v.p)
	return r.data, check(r.status, "GetTensorMutableData", "")
}

// Release frees the value, not the memory a NewTensor value wraps. Idempotent.
func (v *Value) Release() {
	if v != nil && v.p != nil {
		C.vort_release_value(v.p)
		v.p = nil
	}
}

// Alloc returns n > 0 bytes of zeroed host memory aligned to 64 bytes (posix_memalign), or nil
// when out of memory. Free it with Free. It is outside the Go heap, so ONNX Runtime may keep
// pointers to it, and Go may view it with unsafe.Slice.
func Alloc(n int) unsafe.Pointer {
	if n <= 0 {
		return nil
	}
	var p unsafe.Pointer
	if C.posix_memalign(&p, 64, C.size_t(n)) != 0 {
		return nil
	}
	C.memset(p, 0, C.size_t(n))
	return p
}

// Free frees memory from Alloc (nil is a no-op).
func Free(p unsafe.Pointer) { C.free(p) }

// HostTensor is a tensor over host memory it owns (Alloc'ed, zeroed): a Value plus its buffer.
type HostTensor struct {
	Value
	Type  int     // element type
	Shape []int64 // fixed at creation
	ptr   unsafe.Pointer
	bytes int
}

// NewHostTensor allocates a zeroed host tensor of element type elem and shape (all dims > 0).
func NewHostTensor(m *MemoryInfo, elem int, shape []int64) (*HostTensor, error) {
	size := ElementSize(elem)
	n := 1
	for _, d := range shape {
		if d <= 0 {
			return nil, fmt.Errorf("ort: NewHostTensor: shape %v has a non-positive dimension", shape)
		}
		n *= int(d)
	}
	if size == 0 {
		return nil, fmt.Errorf("ort: NewHostTensor: unsupported element type %s", TypeName(elem))
	}
	t := &HostTensor{Type: elem, Shape: append([]int64(nil), shape...), bytes: n * size}
	if t.ptr = Alloc(t.bytes); t.ptr == nil {
		return nil, fmt.Errorf("ort: NewHostTensor: cannot allocate %d bytes for %v", t.bytes, shape)
	}
	v, err := NewTensor(m, t.ptr, t.bytes, elem, shape)
	if err != nil {
		Free(t.ptr)
		return nil, err
	}
	t.Value = *v
	return t, nil
}

// Ptr returns the buffer's address.
func (t *HostTensor) Ptr() unsafe.Pointer { return t.ptr }

// Bytes returns the buffer as bytes (valid until Release).
func (t *HostTensor) Bytes() []byte { return unsafe.Slice((*byte)(t.ptr), t.bytes) }

// Float32 returns the buffer as float32s (valid until Release); nil unless the type is Float32.
func (t *HostTensor) Float32() []float32 {
	if t.Type != Float32 || t.ptr == nil {
		return nil
	}
	return unsafe.Slice((*float32)(t.ptr), t.bytes/4)
}

// Release frees the value and the buffer. Idempotent.
func (t *HostTensor) Release() {
	if t == nil {
		return
	}
	t.Value.Release()
	if t.ptr != nil {
		Free(t.ptr)
		t.ptr = nil
	}
}
