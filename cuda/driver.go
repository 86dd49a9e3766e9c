package cuda

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "driver.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/vinfer/vinfer/internal/sigstack"
)

// DefaultLibrary is the driver library loaded by Init; VINFER_LIBCUDA overrides it.
const DefaultLibrary = "libcuda.so.1"

var (
	// ErrNoDriver means libcuda.so.1 (the NVIDIA driver's CUDA library) could not be loaded.
	ErrNoDriver = errors.New("cuda: NVIDIA driver library not found (libcuda.so.1); install the NVIDIA driver or use the CPU path")
	// ErrNoDevice means the driver loaded but reports no CUDA device.
	ErrNoDevice = errors.New("cuda: no CUDA device visible (check nvidia-smi and CUDA_VISIBLE_DEVICES)")
)

// Error is a CUDA driver API failure.
type Error struct {
	Op   string // the driver call, e.g. "cuMemAlloc"
	Code int    // the CUresult
	Name string // e.g. "CUDA_ERROR_OUT_OF_MEMORY"
	Msg  string // the driver's description
}

func (e *Error) Error() string {
	return fmt.Sprintf("cuda: %s: %s (%d): %s", e.Op, e.Name, e.Code, e.Msg)
}

// CUresult codes callers may test for.
const (
	codeNotInitialized = 3
	codeNoDevice       = 100
	codeNotReady       = 600
)

func check(op string, r C.CUresult) error {
	if r == 0 {
		return nil
	}
	e := &Error{Op: op, Code: int(r), Name: "CUDA_ERROR_UNKNOWN", Msg: "unknown error"}
	var s *C.char
	if C.vf_cuGetErrorName(r, &s) == 0 && s != nil {
		e.Name = C.GoString(s)
	}
	if C.vf_cuGetErrorString(r, &s) == 0 && s != nil {
		e.Msg = C.GoString(s)
	}
	return e
}

var (
	initOnce sync.Once
	initErr  error
	version  int
)

// Init loads the driver library and calls cuInit once per process; later calls return the first
// result. It returns an error wrapping ErrNoDriver or ErrNoDevice when the GPU path is unavailable.
func Init() error {
	initOnce.Do(func() {
		lib := os.Getenv("VINFER_LIBCUDA")
		if lib == "" {
			lib = DefaultLibrary
		}
		cs := C.CString(lib)
		defer C.free(unsafe.Pointer(cs))
		if msg := C.vf_load(cs); msg != nil {
			initErr = fmt.Errorf("%w: %s", ErrNoDriver, C.GoString(msg))
			return
		}
		if r := C.vf_cuInit(0); r != 0 {
			if r == codeNoDevice {
				initErr = ErrNoDevice
				return
			}
			initErr = check("cuInit", r)
			return
		}
		var v C.int
		if err := check("cuDriverGetVersion", C.vf_cuDriverGetVersion(&v)); err != nil {
			initErr = err
			return
		}
		version = int(v)
		sigstack.Fix() // the driver may install signal handlers without SA_ONSTACK
	})
	return initErr
}

// DriverVersion returns the CUDA version the driver supports as major*1000+minor*10 (13000 for
// CUDA 13.0), after a successful Init.
func DriverVersion() int { return version }

// DeviceCount initializes the driver and returns the number of visible CUDA devices.
func DeviceCount() (int, error) {
	if err := Init(); err != nil {
		return 0, err
	}
	var n C.int
	if err := check("cuDeviceGetCount", C.vf_cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Available reports whether at least one CUDA device can be used.
func Available() bool {
	n, err := DeviceCount()
	return err == nil && n > 0
}
