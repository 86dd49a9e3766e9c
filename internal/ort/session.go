package ort

/*
#include "ort.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Graph optimization levels (ORT's GraphOptimizationLevel).
const (
	OptDisable  = 0
	OptBasic    = 1
	OptExtended = 2
	OptAll      = 99
)

// SessionOptions configure a session before it is created.
type SessionOptions struct{ p *C.OrtSessionOptions }

// NewSessionOptions returns default options.
func NewSessionOptions() (*SessionOptions, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	var o SessionOptions
	if err := check("CreateSessionOptions", C.vort_create_session_options(&o.p)); err != nil {
		return nil, err
	}
	return &o, nil
}

// Release frees the options (sessions created from them stay valid).
func (o *SessionOptions) Release() {
	if o != nil && o.p != nil {
		C.vort_release_session_options(o.p)
		o.p = nil
	}
}

// SetIntraOpThreads sets the threads one operator may use (0: ORT's default, one per core).
func (o *SessionOptions) SetIntraOpThreads(n int) error {
	return check("SetIntraOpNumThreads", C.vort_set_intra_threads(o.p, C.int(n)))
}

// SetInterOpThreads sets the threads running independent operators in parallel mode.
func (o *SessionOptions) SetInterOpThreads(n int) error {
	return check("SetInterOpNumThreads", C.vort_set_inter_threads(o.p, C.int(n)))
}

// SetGraphOptimization sets the level (OptDisable … OptAll).
func (o *SessionOptions) SetGraphOptimization(level int) error {
	return check("SetSessionGraphOptimizationLevel", C.vort_set_opt_level(o.p, C.int(level)))
}

// SetOptimizedModelPath makes session creation write the optimized graph to path.
func (o *SessionOptions) SetOptimizedModelPath(path string) error {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	return check("SetOptimizedModelFilePath", C.vort_set_optimized_path(o.p, cs))
}

// AddConfigEntry sets a session configuration key (onnxruntime_session_options_config_keys.h).
func (o *SessionOptions) AddConfigEntry(key, value string) error {
	ck, cv := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(ck))
	defer C.free(unsafe.Pointer(cv))
	return check("AddSessionConfigEntry "+key, C.vort_add_config_entry(o.p, ck, cv))
}

// SetParallelExecution selects ORT_PARALLEL (true) or ORT_SEQUENTIAL execution.
func (o *SessionOptions) SetParallelExecution(on bool) error {
	m := 0
	if on {
		m = 1
	}
	return check("SetSessionExecutionMode", C.vort_set_execution_mode(o.p, C.int(m)))
}

// AppendExecutionProvider adds a plugin execution provider device (from Env.EpDevices) with
// provider options, e.g. {"device_id": "0"}.
func (o *SessionOptions) AppendExecutionProvider(env *Env, dev EpDevice, options map[string]string) error {
	keys := make([]*C.char, 0, len(options)+1)
	vals := make([]*C.char, 0, len(options)+1)
	for k, v := range options {
		keys = append(keys, C.CString(k))
		vals = append(vals, C.CString(v))
	}
	defer func() {
		for i := range keys {
			C.free(unsafe.Pointer(keys[i]))
			C.free(unsafe.Pointer(vals[i]))
		}
	}()
	n := len(keys)
	// Arrays of C pointers in C memory (cgo forbids Go memory holding pointers passed to C).
	ck := (**C.char)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(uintptr(0)))))
	cv := (**C.char)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(ck))
	defer C.free(unsafe.Pointer(cv))
	copy(unsafe.Slice(ck, n+1), keys)
	copy(unsafe.Slice(cv, n+1), vals)
	return check("SessionOptionsAppendExecutionProvider_V2 "+dev.Name,
		C.vort_append_ep_v2(o.p, env.p, dev.p, ck, cv, C.size_t(n)))
}

// Element types (ONNXTensorElementDataType) vinfer handles.
const (
	Float32 = 1
	Uint8   = 2
	Int64   = 7
	Float16 = 10
)

// TypeName returns the element type's name ("float32"…).
func TypeName(t int) string {
	switch t {
	case Float32:
		return "float32"
	case Uint8:
		return "uint8"
	case Int64:
		return "int64"
	case Float16:
		return "float16"
	}
	return fmt.Sprintf("type%d", t)
}

// IOInfo describes a session input or output; dynamic dims are -1.
type IOInfo struct {
	Name  string
	Type  int
	Shape []int64
}

// Session is a loaded model.
type Session struct {
	p       *C.OrtSession
	Inputs  []IOInfo
	Outputs []IOInfo
}

// NewSessionFromBytes creates a session from an ONNX model in memory. model must stay valid for
// the call only; it may be mmap'ed (it is not copied into the Go heap).
func NewSessionFromBytes(env *Env, model []byte, o *SessionOptions) (*Session, error) {
	if len(model) == 0 {
		return nil, fmt.Errorf("ort: model is empty")
	}
	var s Session
	// model may be Go memory: ORT reads it during the call only, which cgo allows.
	if err := check("CreateSessionFromArray", C.vort_create_session_from_array(env.p,
		unsafe.Pointer(&model[0]), C.size_t(len(model)), o.p, &s.p)); err != nil {
		return nil, err
	}
	return s.describe()
}

// NewSession creates a session from an ONNX file.
func NewSession(env *Env, path string, o *SessionOptions) (*Session, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var s Session
	if err := check("CreateSession "+path, C.vort_create_session(env.p, cs, o.p, &s.p)); err != nil {
		return nil, err
	}
	return s.describe()
}

func (s *Session) describe() (*Session, error) {
	for out := 0; out < 2; out++ {
		var n C.size_t
		if err := check("SessionGetIOCount", C.vort_io_count(s.p, C.int(out), &n)); err != nil {
			s.Release()
			return nil, err
		}
		for i := 0; i < int(n); i++ {
			var name *C.char
			var elem C.int
			var dims [8]C.int64_t
			nd := C.size_t(len(dims))
			if err := check("SessionGetIOInfo", C.vort_io_info(s.p, C.int(out), C.size_t(i), &name, &elem, &dims[0], &nd)); err != nil {
				s.Release()
				return nil, err
			}
			info := IOInfo{Name: C.GoString(name), Type: int(elem)}
			C.free(unsafe.Pointer(name))
			for _, d := range dims[:nd] {
				info.Shape = append(info.Shape, int64(d))
			}
			if out == 0 {
				s.Inputs = append(s.Inputs, info)
			} else {
				s.Outputs = append(s.Outputs, info)
			}
		}
	}
	return s, nil
}

// Release frees the session.
func (s *Session) Release() {
	if s != nil && s.p != nil {
		C.vort_release_session(s.p)
		s.p = nil
	}
}

// Run runs the model on inputs, writing into preallocated outputs (in the order of names).
// names are C strings from NewNames; no Go memory is retained by ORT.
func (s *Session) Run(inNames *Names, in *Values, outNames *Names, out *Values) error {
	return check("Run", C.vort_run(s.p, inNames.p, in.p, C.size_t(in.n), outNames.p, C.size_t(out.n), out.p))
}

// Names is an array of C strings for Run, allocated once.
type Names struct {
	p **C.char
	n int
}

// NewNames copies names into C memory.
func NewNames(names []string) *Names {
	p := (**C.char)(C.calloc(C.size_t(len(names)+1), C.size_t(unsafe.Sizeof(uintptr(0)))))
	s := unsafe.Slice(p, len(names))
	for i, n := range names {
		s[i] = C.CString(n)
	}
	return &Names{p: p, n: len(names)}
}

// Release frees the names.
func (n *Names) Release() {
	if n == nil || n.p == nil {
		return
	}
	for _, c := range unsafe.Slice(n.p, n.n) {
		C.free(unsafe.Pointer(c))
	}
	C.free(unsafe.Pointer(n.p))
	n.p = nil
}

// Values is an array of OrtValue pointers in C memory for Run. It does not own the values.
type Values struct {
	p **C.OrtValue
	n int
}

// NewValues makes an array of n value slots.
func NewValues(n int) *Values {
	return &Values{p: (**C.OrtValue)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(uintptr(0))))), n: n}
}

// Set puts v in slot i.
func (vs *Values) Set(i int, v *Value) { unsafe.Slice(vs.p, vs.n)[i] = v.p }

// Release frees the array (not the values).
func (vs *Values) Release() {
	if vs != nil && vs.p != nil {
		C.free(unsafe.Pointer(vs.p))
		vs.p = nil
	}
}

// Take returns the value ORT stored in slot i (after a Run with empty output slots); the
// caller owns and releases it.
func (vs *Values) Take(i int) *Value {
	s := unsafe.Slice(vs.p, vs.n)
	v := &Value{p: s[i]}
	s[i] = nil
	return v
}
