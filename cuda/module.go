package cuda

/*
#include <stdlib.h>
#include "driver.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Module is code loaded into a device's context (cuModuleLoadData).
type Module struct {
	dev *Device
	m   C.CUmodule
}

// LoadModule loads a PTX (NUL-terminated or not) or cubin image; the driver JIT-compiles PTX for
// the device. Load modules at start-up: JIT compilation takes milliseconds.
func (d *Device) LoadModule(image []byte) (*Module, error) {
	if len(image) == 0 {
		return nil, fmt.Errorf("cuda: LoadModule: empty image (was the PTX embedded? see cuda/kernels/README.md)")
	}
	c := C.CBytes(append(image[:len(image):len(image)], 0))
	defer C.free(c)
	mod := &Module{dev: d}
	if err := d.with(func() error { return check("cuModuleLoadData", C.vf_cuModuleLoadData(&mod.m, c)) }); err != nil {
		return nil, err
	}
	return mod, nil
}

// Function looks up a kernel by its (extern "C") name.
func (m *Module) Function(name string) (*Function, error) {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	f := &Function{dev: m.dev, name: name}
	if err := m.dev.with(func() error { return check("cuModuleGetFunction", C.vf_cuModuleGetFunction(&f.f, m.m, cs)) }); err != nil {
		return nil, fmt.Errorf("kernel %q: %w", name, err)
	}
	return f, nil
}

// Unload unloads the module; its Functions become invalid.
func (m *Module) Unload() error {
	if m.m == nil {
		return nil
	}
	err := m.dev.with(func() error { return check("cuModuleUnload", C.vf_cuModuleUnload(m.m)) })
	m.m = nil
	return err
}

// Function is a kernel of a loaded Module.
type Function struct {
	dev  *Device
	f    C.CUfunction
	name string
}

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z uint32 }

// Launch queues the kernel on s with grid×block threads and the parameters packed in args
// (CU_LAUNCH_PARAM_BUFFER_POINTER). If the calling thread has another context current it binds
// the device's context first and counts a rebind in Stats; GPU workers inside RunLocked never
// rebind. Launch does not allocate.
func (f *Function) Launch(grid, block Dim3, sharedMem int, s *Stream, args *Args) error {
	if err := args.Err(); err != nil {
		return fmt.Errorf("launching %s: %w", f.name, err)
	}
	buf, n := args.bytes()
	counters.launches.Add(1)
	r := C.vf_launch(f.dev.ctx, (*C.ulonglong)(unsafe.Pointer(&counters.rebinds)), f.f,
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z), C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(sharedMem), s.s, (*C.uchar)(unsafe.Pointer(buf)), C.size_t(n))
	if r != 0 {
		return fmt.Errorf("launching %s: %w", f.name, check("cuLaunchKernel", r))
	}
	return nil
}

// GridFor returns the grid covering a w×h domain with blocks of block.X×block.Y threads.
func GridFor(w, h int, block Dim3) Dim3 {
	return Dim3{X: uint32((w + int(block.X) - 1) / int(block.X)), Y: uint32((h + int(block.Y) - 1) / int(block.Y)), Z: 1}
}
