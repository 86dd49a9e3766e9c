// Package ort is vinfer's cgo binding to ONNX Runtime's C API (the official header vendored in
// third_party/onnxruntime, ORT_API_VERSION 24, which ONNX Runtime 1.24 and later provide).
//
// The shared library is opened at run time with dlopen (Load), so vinfer builds and links with
// no ONNX Runtime present, and one binary runs with the CPU library or a GPU-enabled one. The
// package wraps only what vinfer uses.
//
// Ownership: every type wrapping a C object (Env, SessionOptions, Session, MemoryInfo, Value,
// IoBinding, Names, Values, HostTensor) has a Release method that frees it; Release is
// idempotent and nil-safe, and no finalizers run, so the owner must call it. Memory handed to
// ONNX Runtime beyond the duration of a call (tensor data) must be native memory (Alloc,
// mmap'ed, or device memory), never Go heap memory, which cgo forbids C to retain.
//
// Concurrency: Session.Run may be called from several goroutines at once (ONNX Runtime allows
// it), but not with the same Values arrays or tensors; the other objects are not safe for
// concurrent mutation.
package ort

/*
#cgo CFLAGS: -I${SRCDIR}/../../third_party/onnxruntime/include -O2
#cgo LDFLAGS: -ldl
#include "ort.h"
*/
import "C"

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/vinfer/vinfer/internal/sigstack"
)

// LibraryEnv names the environment variable that gives the library's path.
const LibraryEnv = "VINFER_ORT_LIB"

// LibraryName is the library's file name (its soname on Linux).
const LibraryName = "libonnxruntime.so.1"

// APIVersion is the C API version vinfer asks for (ORT_API_VERSION of the vendored header).
const APIVersion = int(C.ORT_API_VERSION)

var (
	loadMu sync.Mutex
	loaded string
)

// Load opens the ONNX Runtime shared library, once per process. An explicit path is used as
// is. With path "", it tries in order: $VINFER_ORT_LIB (alone, when set);
// third_party/ort/lib/libonnxruntime.so.1 in the executable's directory, the working directory,
// or any of their parents (where scripts/setup.sh installs it); then "libonnxruntime.so.1"
// through the system loader (LD_LIBRARY_PATH, ld.so.cache). The error lists every path tried
// with dlopen's reason. Once a library is loaded, Load("") and Load of the same path return
// nil, and Load of another path returns an error.
func Load(path string) error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded != "" {
		if path == "" || path == loaded {
			return nil
		}
		return fmt.Errorf("ort: cannot load %s: ONNX Runtime is already loaded from %s", path, loaded)
	}
	// No usage telemetry leaves the process: the npm build of ONNX Runtime carries Microsoft's
	// collector, which reads this at load time (DisableTelemetryEvents follows on every Env).
	if _, set := os.LookupEnv("ORT_DISABLE_TELEMETRY"); !set {
		os.Setenv("ORT_DISABLE_TELEMETRY", "1")
	}
	candidates := []string{path}
	if path == "" {
		candidates = Candidates()
	}
	p, err := loadFirst(candidates)
	if err != nil {
		return err
	}
	loaded = p
	sigstack.Fix() // a library's constructors may have installed signal handlers without SA_ONSTACK
	return nil
}

// loadFirst opens the first candidate that loads; a failed attempt changes nothing.
func loadFirst(candidates []string) (string, error) {
	var tried []string
	for _, c := range candidates {
		cs := C.CString(c)
		msg := C.vort_load(cs)
		C.free(unsafe.Pointer(cs))
		if msg == nil {
			return c, nil
		}
		m := C.GoString(msg)
		if !strings.HasPrefix(m, c+": ") { // dlerror's messages start with the path
			m = c + ": " + m
		}
		tried = append(tried, m)
	}
	return "", fmt.Errorf("ort: cannot load ONNX Runtime (C API %d, version 1.24 or later); run scripts/setup.sh, "+
		"or set %s to the path of %s. Tried:\n  %s", APIVersion, LibraryEnv, LibraryName, strings.Join(tried, "\n  "))
}

// Candidates lists the paths Load("") tries, in order.
func Candidates() []string {
	if p := os.Getenv(LibraryEnv); p != "" {
		return []string{p}
	}
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
	var out []string
	seen := map[string]bool{}
	for _, s := range starts {
		for d := s; ; d = filepath.Dir(d) {
			p := filepath.Join(d, "third_party", "ort", "lib", LibraryName)
			if _, err := os.Stat(p); err == nil && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return append(out, LibraryName)
}

// Loaded returns the path the library was loaded from, "" before a successful Load.
func Loaded() string {
	loadMu.Lock()
	defer loadMu.Unlock()
	return loaded
}

// Version returns the loaded library's version, e.g. "1.30.0" ("" before Load).
func Version() string { return C.GoString(C.vort_version()) }

func ready() error {
	if Loaded() == "" {
		return fmt.Errorf("ort: ONNX Runtime is not loaded (call ort.Load first)")
	}
	return nil
}

// ErrorCode is ONNX Runtime's OrtErrorCode.
type ErrorCode int

// Error codes (OrtErrorCode in onnxruntime_c_api.h).
const (
	CodeOK ErrorCode = iota
	CodeFail
	CodeInvalidArgument
	CodeNoSuchFile
	CodeNoModel
	CodeEngineError
	CodeRuntimeException
	CodeInvalidProtobuf
	CodeModelLoaded
	CodeNotImplemented
	CodeInvalidGraph
	CodeEPFail
	CodeModelLoadCanceled
	CodeModelRequiresCompilation
	CodeNotFound
)

var codeNames = [...]string{"ORT_OK", "ORT_FAIL", "ORT_INVALID_ARGUMENT", "ORT_NO_SUCHFILE", "ORT_NO_MODEL",
	"ORT_ENGINE_ERROR", "ORT_RUNTIME_EXCEPTION", "ORT_INVALID_PROTOBUF", "ORT_MODEL_LOADED", "ORT_NOT_IMPLEMENTED",
	"ORT_INVALID_GRAPH", "ORT_EP_FAIL", "ORT_MODEL_LOAD_CANCELED", "ORT_MODEL_REQUIRES_COMPILATION", "ORT_NOT_FOUND"}

func (c ErrorCode) String() string {
	if c >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("ORT_ERROR_%d", int(c))
}

// Error is a failed ONNX Runtime call: the operation (C API function and its subject), ORT's
// error code and ORT's message.
type Error struct {
	Op      string
	Code    ErrorCode
	Message string
}

func (e *Error) Error() string {
	return fmt.Sprintf("ort: %s: %s: %s", e.Op, e.Code, e.Message)
}

// check converts a status into an *Error and releases it. subject, when not empty, is appended
// to op; the concatenation happens only on failure, keeping successful calls allocation-free.
func check(st *C.OrtStatus, op, subject string) error {
	if st == nil {
		return nil
	}
	if subject != "" {
		op += " " + subject
	}
	e := &Error{Op: op, Code: ErrorCode(C.vort_status_code(st)), Message: C.GoString(C.vort_status_message(st))}
	C.vort_release_status(st)
	return e
}
