package cuda

/*
#include <string.h>
#include "driver.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Ptr is a device address (CUdeviceptr).
type Ptr uintptr

// Add returns p advanced by n bytes.
func (p Ptr) Add(n int) Ptr { return p + Ptr(n) }

// Buffer is device memory of a fixed size, from cuMemAlloc or a MemPool.
type Buffer struct {
	Ptr  Ptr
	Size int // bytes
	dev  *Device
	pool *MemPool
}

// Alloc allocates size bytes of device memory with cuMemAlloc (synchronous; for long-lived
// buffers allocated at start-up).
func (d *Device) Alloc(size int) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: Alloc(%d): size must be positive", size)
	}
	b := &Buffer{Size: size, dev: d}
	err := d.with(func() error {
		var p C.CUdeviceptr
		if err := check("cuMemAlloc", C.vf_cuMemAlloc(&p, C.size_t(size))); err != nil {
			return err
		}
		b.Ptr = Ptr(p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	counters.devAllocs.Add(1)
	return b, nil
}

// Free returns the buffer's memory: to its pool, ordered after the work on s, for pool buffers
// (s may be nil to free after all work of the device); with cuMemFree otherwise.
func (b *Buffer) Free(s *Stream) error {
	if b.Ptr == 0 {
		return nil
	}
	p := b.Ptr
	b.Ptr = 0
	if b.pool != nil {
		var cs C.CUstream
		if s != nil {
			cs = s.s
		}
		return b.dev.with(func() error { return check("cuMemFreeAsync", C.vf_cuMemFreeAsync(C.CUdeviceptr(p), cs)) })
	}
	return b.dev.with(func() error { return check("cuMemFree", C.vf_cuMemFree(C.CUdeviceptr(p))) })
}

// MemPool is a stream-ordered device memory pool (cuMemPoolCreate). Freed blocks stay cached in
// the pool up to the release threshold, so steady-state allocation does not reach the driver's
// allocator and device memory use stays flat.
type MemPool struct {
	dev *Device
	p   C.CUmemoryPool
}

// Pool attributes (CUmemPool_attribute).
const (
	poolAttrReleaseThreshold = 4
	poolAttrReservedCurrent  = 5
	poolAttrUsedCurrent      = 7
	poolAttrUsedHigh         = 8
)

// NewMemPool creates a device memory pool that keeps up to keep bytes cached after frees
// (use ^uint64(0) to keep everything). It fails on devices without memory-pool support.
func (d *Device) NewMemPool(keep uint64) (*MemPool, error) {
	if !d.MemoryPools {
		return nil, fmt.Errorf("cuda: %s does not support memory pools (cuMemAllocAsync)", d)
	}
	mp := &MemPool{dev: d}
	err := d.with(func() error {
		var props C.vf_CUmemPoolProps
		props.allocType = 1    // CU_MEM_ALLOCATION_TYPE_PINNED
		props.locationType = 1 // CU_MEM_LOCATION_TYPE_DEVICE
		props.locationId = C.int(d.ordinal)
		if err := check("cuMemPoolCreate", C.vf_cuMemPoolCreate(&mp.p, &props)); err != nil {
			return err
		}
		v := C.ulonglong(keep)
		return check("cuMemPoolSetAttribute", C.vf_cuMemPoolSetAttribute(mp.p, poolAttrReleaseThreshold, unsafe.Pointer(&v)))
	})
	if err != nil {
		return nil, err
	}
	return mp, nil
}

// Alloc allocates size bytes from the pool, ordered on s (cuMemAllocFromPoolAsync): the memory
// may be used by work queued on s after this call.
func (mp *MemPool) Alloc(size int, s *Stream) (*Buffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: pool Alloc(%d): size must be positive", size)
	}
	b := &Buffer{Size: size, dev: mp.dev, pool: mp}
	err := mp.dev.with(func() error {
		var p C.CUdeviceptr
		if err := check("cuMemAllocFromPoolAsync", C.vf_cuMemAllocFromPoolAsync(&p, C.size_t(size), mp.p, s.s)); err != nil {
			return err
		}
		b.Ptr = Ptr(p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	counters.poolAllocs.Add(1)
	return b, nil
}

// PoolUsage is a pool's memory accounting in bytes.
type PoolUsage struct {
	Reserved uint64 // device memory the pool holds (in use and cached)
	Used     uint64 // handed out and not yet freed
	UsedHigh uint64 // most Used so far
}

// Usage reads the pool's accounting.
func (mp *MemPool) Usage() (PoolUsage, error) {
	var u PoolUsage
	for _, a := range []struct {
		attr int
		dst  *uint64
	}{{poolAttrReservedCurrent, &u.Reserved}, {poolAttrUsedCurrent, &u.Used}, {poolAttrUsedHigh, &u.UsedHigh}} {
		var v C.ulonglong
		if err := check("cuMemPoolGetAttribute", C.vf_cuMemPoolGetAttribute(mp.p, C.int(a.attr), unsafe.Pointer(&v))); err != nil {
			return u, err
		}
		*a.dst = uint64(v)
	}
	return u, nil
}

// Trim releases cached memory beyond keep bytes back to the device.
func (mp *MemPool) Trim(keep uint64) error {
	return check("cuMemPoolTrimTo", C.vf_cuMemPoolTrimTo(mp.p, C.size_t(keep)))
}

// Destroy destroys the pool; all its buffers must have been freed.
func (mp *MemPool) Destroy() error {
	if mp.p == nil {
		return nil
	}
	err := mp.dev.with(func() error { return check("cuMemPoolDestroy", C.vf_cuMemPoolDestroy(mp.p)) })
	mp.p = nil
	return err
}

// HostBuffer is page-locked (pinned) host memory, so that copies to and from the device run
// asynchronously at full PCIe speed. Bytes aliases the C allocation: do not use it after Free.
type HostBuffer struct {
	Bytes []byte
	p     unsafe.Pointer
	dev   *Device
}

// AllocHost allocates size bytes of pinned host memory (cuMemHostAlloc, portable).
func (d *Device) AllocHost(size int) (*HostBuffer, error) {
	if size <= 0 {
		return nil, fmt.Errorf("cuda: AllocHost(%d): size must be positive", size)
	}
	h := &HostBuffer{dev: d}
	err := d.with(func() error {
		return check("cuMemHostAlloc", C.vf_cuMemHostAlloc(&h.p, C.size_t(size), 1))
	})
	if err != nil {
		return nil, err
	}
	h.Bytes = unsafe.Slice((*byte)(h.p), size)
	counters.hostAllocs.Add(1)
	return h, nil
}

// Float32s views the buffer as float32 values (the buffer is page aligned).
func (h *HostBuffer) Float32s() []float32 {
	return unsafe.Slice((*float32)(h.p), len(h.Bytes)/4)
}

// Free releases the pinned memory.
func (h *HostBuffer) Free() error {
	if h.p == nil {
		return nil
	}
	p := h.p
	h.p, h.Bytes = nil, nil
	return h.dev.with(func() error { return check("cuMemFreeHost", C.vf_cuMemFreeHost(p)) })
}

// CopyHtoD queues a copy of n bytes from pinned host memory src to dst on s. src must stay
// untouched until the stream passes the copy.
func (s *Stream) CopyHtoD(dst Ptr, src *HostBuffer, n int) error {
	if n > len(src.Bytes) {
		return fmt.Errorf("cuda: CopyHtoD of %d bytes from a %d-byte host buffer", n, len(src.Bytes))
	}
	counters.htod.Add(1)
	counters.htodBytes.Add(uint64(n))
	return check("cuMemcpyHtoDAsync", C.vf_cuMemcpyHtoDAsync(C.CUdeviceptr(dst), src.p, C.size_t(n), s.s))
}

// CopyDtoH queues a copy of n bytes from dst's device address src into pinned host memory on s;
// the bytes are valid once the stream (or an event recorded after) completes.
func (s *Stream) CopyDtoH(dst *HostBuffer, src Ptr, n int) error {
	if n > len(dst.Bytes) {
		return fmt.Errorf("cuda: CopyDtoH of %d bytes into a %d-byte host buffer", n, len(dst.Bytes))
	}
	counters.dtoh.Add(1)
	counters.dtohBytes.Add(uint64(n))
	return check("cuMemcpyDtoHAsync", C.vf_cuMemcpyDtoHAsync(dst.p, C.CUdeviceptr(src), C.size_t(n), s.s))
}

// CopyDtoH2D queues a copy of rows rows of width bytes from device memory src (srcPitch bytes
// between rows) into pinned host memory at dst.Bytes[off:] (dstPitch bytes between rows), on s
// (cuMemcpy2DAsync): one copy of a pitched picture plane.
func (s *Stream) CopyDtoH2D(dst *HostBuffer, off, dstPitch int, src Ptr, srcPitch, width, rows int) error {
	if rows <= 0 || width <= 0 {
		return nil
	}
	if off < 0 || width > dstPitch || width > srcPitch || off+(rows-1)*dstPitch+width > len(dst.Bytes) {
		return fmt.Errorf("cuda: CopyDtoH2D of %dx%d bytes (pitch %d) at offset %d overflows a %d-byte host buffer", width, rows, dstPitch, off, len(dst.Bytes))
	}
	c := C.vf_CUDA_MEMCPY2D{
		srcMemoryType: 2, srcDevice: C.CUdeviceptr(src), srcPitch: C.size_t(srcPitch),
		dstMemoryType: 1, dstHost: unsafe.Add(dst.p, off), dstPitch: C.size_t(dstPitch),
		WidthInBytes: C.size_t(width), Height: C.size_t(rows),
	}
	counters.dtoh.Add(1)
	counters.dtohBytes.Add(uint64(width * rows))
	return check("cuMemcpy2DAsync", C.vf_cuMemcpy2DAsync(&c, s.s))
}

// CopyDtoD queues a device-to-device copy of n bytes on s.
func (s *Stream) CopyDtoD(dst, src Ptr, n int) error {
	counters.dtod.Add(1)
	return check("cuMemcpyDtoDAsync", C.vf_cuMemcpyDtoDAsync(C.CUdeviceptr(dst), C.CUdeviceptr(src), C.size_t(n), s.s))
}

// Fill32 queues setting n 32-bit words at dst to v on s (cuMemsetD32Async), e.g. to poison an
// output with NaN (0x7fc00000) in tests.
func (s *Stream) Fill32(dst Ptr, v uint32, n int) error {
	return check("cuMemsetD32Async", C.vf_cuMemsetD32Async(C.CUdeviceptr(dst), C.uint(v), C.size_t(n), s.s))
}
