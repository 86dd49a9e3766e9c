package ort

/*
#include "ort.h"
*/
import "C"

import (
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Logging levels (OrtLoggingLevel): messages of the level and above go to stderr.
const (
	LogVerbose = 0
	LogInfo    = 1
	LogWarning = 2
	LogError   = 3
	LogFatal   = 4
)

// Env is ONNX Runtime's environment: logging, global thread pools and the registered execution
// provider libraries. ONNX Runtime keeps one per process; use SharedEnv unless a test needs
// its own. Sessions must be released before their Env.
type Env struct{ p *C.OrtEnv }

// NewEnv creates an environment logging at level (LogVerbose … LogFatal) and above under the
// log id. The library must be loaded (Load).
func NewEnv(level int, id string) (*Env, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	cs := C.CString(id)
	defer C.free(unsafe.Pointer(cs))
	var e Env
	if err := check(C.vort_create_env(C.int(level), cs, &e.p), "CreateEnv", ""); err != nil {
		return nil, err
	}
	return &e, nil
}

var (
	sharedOnce  sync.Once
	sharedEnv   *Env
	sharedErr   error
	sharedLevel atomic.Int32
)

func init() { sharedLevel.Store(LogError) }

// SetSharedLogLevel sets the log level SharedEnv creates its environment with (default
// LogError: ONNX Runtime warns once per initializer listed among an old model's graph inputs,
// which the bundled UltraFace model does for hundreds of them). It has no effect once
// SharedEnv has run.
func SetSharedLogLevel(level int) { sharedLevel.Store(int32(level)) }

// SharedEnv returns the process-wide environment (id "vinfer"), loading the library with
// Load("") first unless it is loaded already. It is never released.
func SharedEnv() (*Env, error) {
	sharedOnce.Do(func() {
		if sharedErr = Load(""); sharedErr == nil {
			sharedEnv, sharedErr = NewEnv(int(sharedLevel.Load()), "vinfer")
		}
	})
	return sharedEnv, sharedErr
}

// Release frees the environment. Idempotent.
func (e *Env) Release() {
	if e != nil && e.p != nil {
		C.vort_release_env(e.p)
		e.p = nil
	}
}

// RegisterExecutionProviderLibrary loads the plugin execution provider library at path (e.g.
// ONNX Runtime's CUDA plugin EP) under the registration name; its devices then appear in
// EpDevices. The library stays loaded until UnregisterExecutionProviderLibrary.
func (e *Env) RegisterExecutionProviderLibrary(name, path string) error {
	cn, cp := C.CString(name), C.CString(path)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(cp))
	return check(C.vort_register_ep_library(e.p, cn, cp), "RegisterExecutionProviderLibrary", path)
}

// UnregisterExecutionProviderLibrary unloads the library registered under name; sessions using
// it must be released first.
func (e *Env) UnregisterExecutionProviderLibrary(name string) error {
	cn := C.CString(name)
	defer C.free(unsafe.Pointer(cn))
	return check(C.vort_unregister_ep_library(e.p, cn), "UnregisterExecutionProviderLibrary", name)
}

// HardwareDevice is the physical device of an EpDevice (OrtHardwareDevice).
type HardwareDevice struct {
	Type     string // "cpu", "gpu" or "npu"
	VendorID uint32 // PCI vendor id, e.g. 0x10de for NVIDIA
	DeviceID uint32 // PCI device id
	Vendor   string
	Metadata map[string]string
}

// EpDevice is an (execution provider, device) pair sessions can run on (OrtEpDevice). The C
// object is owned by the Env and valid while the Env and the provider's library are.
type EpDevice struct {
	p          *C.OrtEpDevice
	EpName     string // execution provider name, e.g. "CPUExecutionProvider", "CUDAExecutionProvider"
	EpVendor   string
	EpMetadata map[string]string
	EpOptions  map[string]string // the provider's default options for this device
	Device     HardwareDevice
}

// EpDevices lists the devices of the built-in execution providers and of the registered
// provider libraries (GetEpDevices).
func (e *Env) EpDevices() ([]EpDevice, error) {
	var devs **C.OrtEpDevice
	var n C.size_t
	if err := check(C.vort_get_ep_devices(e.p, &devs, &n), "GetEpDevices", ""); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	list := unsafe.Slice(devs, int(n))
	out := make([]EpDevice, len(list))
	for i, d := range list {
		hw := C.vort_ep_device_device(d)
		out[i] = EpDevice{
			p:          d,
			EpName:     C.GoString(C.vort_ep_device_ep_name(d)),
			EpVendor:   C.GoString(C.vort_ep_device_ep_vendor(d)),
			EpMetadata: keyValues(C.vort_ep_device_ep_metadata(d)),
			EpOptions:  keyValues(C.vort_ep_device_ep_options(d)),
		}
		if hw != nil {
			out[i].Device = HardwareDevice{
				Type:     [...]string{"cpu", "gpu", "npu"}[min(max(int(C.vort_hw_type(hw)), 0), 2)],
				VendorID: uint32(C.vort_hw_vendor_id(hw)),
				DeviceID: uint32(C.vort_hw_device_id(hw)),
				Vendor:   C.GoString(C.vort_hw_vendor(hw)),
				Metadata: keyValues(C.vort_hw_metadata(hw)),
			}
		}
	}
	return out, nil
}

// keyValues copies an OrtKeyValuePairs (nil: empty map).
func keyValues(kv *C.OrtKeyValuePairs) map[string]string {
	var keys, vals **C.char
	var n C.size_t
	C.vort_kv_pairs(kv, &keys, &vals, &n)
	m := make(map[string]string, int(n))
	if n == 0 {
		return m
	}
	ks, vs := unsafe.Slice(keys, int(n)), unsafe.Slice(vals, int(n))
	for i := range ks {
		m[C.GoString(ks[i])] = C.GoString(vs[i])
	}
	return m
}

// sortedKeys returns m's keys in order, so provider options are passed deterministically.
func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
