package ort

/*
#include "ort.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Tensor element types (ONNXTensorElementDataType).
const (
	Float32 = 1
	Uint8   = 2
	Int8    = 3
	Int32   = 6
	Int64   = 7
	Bool    = 9
	Float16 = 10
	Float64 = 11
)

// TypeName returns an element type's name as tensor.Info uses it ("float32", "float16", …).
func TypeName(t int) string {
	switch t {
	case Float32:
		return "float32"
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Bool:
		return "bool"
	case Float16:
		return "float16"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("onnx_type_%d", t)
}

// ElementSize returns an element type's size in bytes (0 for types vinfer does not handle).
func ElementSize(t int) int {
	switch t {
	case Uint8, Int8, Bool:
		return 1
	case Float16:
		return 2
	case Float32, Int32:
		return 4
	case Int64, Float64:
		return 8
	}
	return 0
}

// IOInfo describes a session input or output as the model declares it.
type IOInfo struct {
	Name string
	// Type is the element type (Float32 …); 0 when the value is not a tensor.
	Type int
	// Shape has -1 for dynamic dimensions.
	Shape []int64
	// Symbols holds each dimension's symbolic name (ONNX dim_param, e.g. "batch"), "" when the
	// dimension is fixed or unnamed.
	Symbols []string
}

// Session is a loaded model (OrtSession). Run is safe for concurrent use with distinct value
// arrays.
type Session struct {
	p       *C.OrtSession
	Inputs  []IOInfo
	Outputs []IOInfo
}

// NewSessionFromBytes creates a session from an ONNX model in memory (CreateSessionFromArray).
// model may be Go memory or native memory such as an mmap'ed file: ONNX Runtime reads it during
// the call only and does not copy it into the Go heap; the caller may unmap it afterwards.
func NewSessionFromBytes(env *Env, model []byte, o *SessionOptions) (*Session, error) {
	if len(model) == 0 {
		return nil, fmt.Errorf("ort: CreateSessionFromArray: model is empty")
	}
	var s Session
	if err := check(C.vort_create_session_from_array(env.p, unsafe.Pointer(unsafe.SliceData(model)),
		C.size_t(len(model)), o.p, &s.p), "CreateSessionFromArray", ""); err != nil {
		return nil, err
	}
	return s.describe()
}

// NewSession creates a session from the ONNX file at path (CreateSession).
func NewSession(env *Env, path string, o *SessionOptions) (*Session, error) {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	var s Session
	if err := check(C.vort_create_session(env.p, cs, o.p, &s.p), "CreateSession", ""); err != nil {
		return nil, err
	}
	return s.describe()
}

func (s *Session) describe() (*Session, error) {
	for out := range 2 {
		var n C.size_t
		if err := check(C.vort_io_count(s.p, C.int(out), &n), "SessionGetInputOutputCount", ""); err != nil {
			s.Release()
			return nil, err
		}
		for i := range int(n) {
			info, err := s.ioInfo(out, i)
			if err != nil {
				s.Release()
				return nil, err
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

func (s *Session) ioInfo(out, i int) (IOInfo, error) {
	var info IOInfo
	var name *C.char
	if err := check(C.vort_io_name(s.p, C.int(out), C.size_t(i), &name), "SessionGetInputOutputName", ""); err != nil {
		return info, err
	}
	info.Name = C.GoString(name)
	C.free(unsafe.Pointer(name))
	var ti *C.OrtTypeInfo
	if err := check(C.vort_io_type_info(s.p, C.int(out), C.size_t(i), &ti), "SessionGetTypeInfo", info.Name); err != nil {
		return info, err
	}
	defer C.vort_release_type_info(ti)
	var tsi *C.OrtTensorTypeAndShapeInfo
	if err := check(C.vort_type_tensor_info(ti, &tsi), "CastTypeInfoToTensorInfo", info.Name); err != nil || tsi == nil {
		return info, err // not a tensor (sequence, map): Type 0
	}
	var elem C.int
	var nd C.size_t
	if err := check(C.vort_tensor_info(tsi, &elem, &nd), "GetTensorElementType", info.Name); err != nil {
		return info, err
	}
	info.Type = int(elem)
	if nd == 0 {
		return info, nil
	}
	// Scratch in C memory: the symbol array receives C pointers.
	dims := (*C.int64_t)(C.calloc(nd, 8))
	syms := (**C.char)(C.calloc(nd, C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(dims))
	defer C.free(unsafe.Pointer(syms))
	if err := check(C.vort_tensor_info_dims(tsi, dims, syms, nd), "GetDimensions", info.Name); err != nil {
		return info, err
	}
	for j, d := range unsafe.Slice(dims, int(nd)) {
		sym := unsafe.Slice(syms, int(nd))[j]
		info.Shape = append(info.Shape, int64(d))
		if sym != nil {
			info.Symbols = append(info.Symbols, C.GoString(sym))
		} else {
			info.Symbols = append(info.Symbols, "")
		}
	}
	return info, nil
}

// Release frees the session. Idempotent.
func (s *Session) Release() {
	if s != nil && s.p != nil {
		C.vort_release_session(s.p)
		s.p = nil
	}
}

// Run runs the model (OrtApi Run). in holds the input values in the order of inNames; out has
// one slot per name in outNames: a preallocated value (ONNX Runtime writes into it; its shape
// must match the result exactly) or an empty slot, which ONNX Runtime fills with a value it
// allocates (release it with out.ReleaseAt). A successful call allocates nothing on the Go heap.
func (s *Session) Run(inNames *Names, in *Values, outNames *Names, out *Values) error {
	if inNames.n != in.n || outNames.n != out.n {
		return fmt.Errorf("ort: Run: %d input names for %d values, %d output names for %d values",
			inNames.n, in.n, outNames.n, out.n)
	}
	out.claimEmpty()
	return check(C.vort_run(s.p, inNames.p, in.p, C.size_t(in.n), outNames.p, C.size_t(out.n), out.p), "Run", "")
}

// Names is an array of C strings (input or output names) for Run, in C memory.
type Names struct {
	p **C.char
	n int
}

// NewNames copies names into C memory.
func NewNames(names []string) *Names {
	p := (**C.char)(C.calloc(C.size_t(len(names)+1), C.size_t(unsafe.Sizeof(uintptr(0)))))
	for i, n := range names {
		unsafe.Slice(p, len(names))[i] = C.CString(n)
	}
	return &Names{p: p, n: len(names)}
}

// Len returns the number of names.
func (n *Names) Len() int { return n.n }

// Release frees the names. Idempotent.
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

// Values is an array of OrtValue slots in C memory, the inputs or outputs of Run. It does not
// own values put in with Set; it owns those ONNX Runtime put in empty output slots, which
// ReleaseAt (or Release) frees.
type Values struct {
	p     **C.OrtValue
	n     int
	owned []bool // slot holds a value ONNX Runtime created
}

// NewValues makes an array of n empty slots.
func NewValues(n int) *Values {
	return &Values{
		p:     (**C.OrtValue)(C.calloc(C.size_t(n+1), C.size_t(unsafe.Sizeof(uintptr(0))))),
		n:     n,
		owned: make([]bool, n),
	}
}

// Len returns the number of slots.
func (vs *Values) Len() int { return vs.n }

func (vs *Values) slots() []*C.OrtValue { return unsafe.Slice(vs.p, vs.n) }

// Set puts v (owned by the caller, who keeps it alive) in slot i; nil empties the slot.
func (vs *Values) Set(i int, v *Value) {
	vs.ReleaseAt(i)
	if v == nil {
		vs.slots()[i] = nil
		return
	}
	vs.slots()[i] = v.p
}

// At returns the value in slot i (the zero Value for an empty slot), still owned by the array
// or by whoever Set it.
func (vs *Values) At(i int) Value { return Value{p: vs.slots()[i]} }

// ReleaseAt frees the value ONNX Runtime allocated in slot i, if any, and empties the slot.
// A value put in with Set is not freed (only the slot is emptied).
func (vs *Values) ReleaseAt(i int) {
	s := vs.slots()
	if s[i] != nil && vs.owned[i] {
		C.vort_release_value(s[i])
	}
	s[i] = nil
	vs.owned[i] = false
}

// claimEmpty marks the empty slots as owned by the array before a Run fills them.
func (vs *Values) claimEmpty() {
	for i, v := range vs.slots() {
		if v == nil {
			vs.owned[i] = true
		}
	}
}

// Release frees the array and the values ONNX Runtime allocated in it (not those Set). Idempotent.
func (vs *Values) Release() {
	if vs == nil || vs.p == nil {
		return
	}
	for i := range vs.n {
		vs.ReleaseAt(i)
	}
	C.free(unsafe.Pointer(vs.p))
	vs.p = nil
}
