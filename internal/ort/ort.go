// Package ort is vinfer's binding to ONNX Runtime's C API (third_party/onnxruntime, API version
// 24). The library is loaded at run time with dlopen, so vinfer builds with no ONNX Runtime
// present and the same binary runs the CPU build or a GPU-enabled one. It wraps only what
// vinfer uses. Every object has a Release method (idempotent); memory passed to ORT (model
// bytes, tensor data) is native memory the caller keeps alive, never Go heap memory, per cgo's
// pointer-passing rules.
package ort

/*
#cgo CFLAGS: -I${SRCDIR}/../../third_party/onnxruntime/include
#cgo LDFLAGS: -ldl
#include "ort.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"
)

// LibraryEnv names the environment variable that overrides the library path.
const LibraryEnv = "VINFER_ORT_LIB"

var (
	loadMu   sync.Mutex
	loaded   string
	errNoLib = errors.New("ort: ONNX Runtime library not loaded")
)

// Load loads the ONNX Runtime shared library once per process. path "" searches, in order:
// $VINFER_ORT_LIB; third_party/ort/lib/libonnxruntime.so.1 beside the executable or the working
// directory or any of their parents (where scripts/setup.sh puts it); then the system loader's
// "libonnxruntime.so.1". Later calls return nil if a library is loaded.
func Load(path string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded != "" {
		return nil
	}
	candidates := []string{path}
	if path == "" {
		candidates = Candidates()
	}
	var tried []string
	for _, c := range candidates {
		cs := C.CString(c)
		msg := C.vort_load(cs)
		C.free(unsafe.Pointer(cs))
		if msg == nil {
			loaded = c
			return nil
		}
		tried = append(tried, fmt.Sprintf("%s: %s", c, C.GoString(msg)))
	}
	return fmt.Errorf("ort: cannot load ONNX Runtime (run scripts/setup.sh, or set %s to libonnxruntime.so.1):\n  %s",
		LibraryEnv, strings.Join(tried, "\n  "))
}

// Candidates lists the paths Load("") tries, in order.
func Candidates() []string {
	if p := os.Getenv(LibraryEnv); p != "" {
		return []string{p}
	}
	var out []string
	seen := map[string]bool{}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			p := filepath.Join(d, "third_party", "ort", "lib", "libonnxruntime.so.1")
			if _, err := os.Stat(p); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return append(out, "libonnxruntime.so.1")
}

// Loaded returns the path of the loaded library, "" before Load.
func Loaded() string {
	loadMu.Lock()
	defer loadMu.Unlock()
	return loaded
}

// Version returns the loaded library's version ("1.30.0").
func Version() string { return C.GoString(C.vort_version()) }

// Error is a failed ONNX Runtime call: the operation, ORT's error code and message.
type Error struct {
	Op      string
	Code    int
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("ort: %s: %s", e.Op, e.Message) }

func check(op string, st *C.OrtStatus) error {
	if st == nil {
		return nil
	}
	e := &Error{Op: op, Code: int(C.vort_status_code(st)), Message: C.GoString(C.vort_status_message(st))}
	C.vort_release_status(st)
	return e
}

func ready() error {
	if Loaded() == "" {
		return errNoLib
	}
	return nil
}

// Env is ONNX Runtime's process-wide environment (logging, thread pools, EP libraries).
type Env struct{ p *C.OrtEnv }

// Logging levels for NewEnv.
const (
	LogVerbose = 0
	LogInfo    = 1
	LogWarning = 2
	LogError   = 3
	LogFatal   = 4
)

// NewEnv creates an environment logging at level and above.
func NewEnv(level int, id string) (*Env, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	cs := C.CString(id)
	defer C.free(unsafe.Pointer(cs))
	var e Env
	if err := check("CreateEnv", C.vort_create_env(C.int(level), cs, &e.p)); err != nil {
		return nil, err
	}
	return &e, nil
}

// Release frees the environment after every session of it.
func (e *Env) Release() {
	if e != nil && e.p != nil {
		C.vort_release_env(e.p)
		e.p = nil
	}
}

// RegisterExecutionProviderLibrary loads a plugin execution provider library (e.g. the CUDA EP)
// under name.
func (e *Env) RegisterExecutionProviderLibrary(name, path string) error {
	cn, cp := C.CString(name), C.CString(path)
	defer C.free(unsafe.Pointer(cn))
	defer C.free(unsafe.Pointer(cp))
	return check("RegisterExecutionProviderLibrary "+path, C.vort_register_ep_library(e.p, cn, cp))
}

// EpDevice is an (execution provider, device) pair ONNX Runtime can run on; owned by the Env.
type EpDevice struct {
	p      *C.OrtEpDevice
	Name   string // execution provider name, e.g. "CUDAExecutionProvider"
	Vendor string
}

// EpDevices lists the execution provider devices of the registered libraries and built-ins.
func (e *Env) EpDevices() ([]EpDevice, error) {
	var devs **C.OrtEpDevice
	var n C.size_t
	if err := check("GetEpDevices", C.vort_get_ep_devices(e.p, &devs, &n)); err != nil {
		return nil, err
	}
	list := unsafe.Slice(devs, int(n))
	out := make([]EpDevice, len(list))
	for i, d := range list {
		out[i] = EpDevice{p: d, Name: C.GoString(C.vort_ep_device_name(d)), Vendor: C.GoString(C.vort_ep_device_vendor(d))}
	}
	return out, nil
}
