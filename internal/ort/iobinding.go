package ort

/*
#include "ort.h"
*/
import "C"

import "unsafe"

// IoBinding binds a session's inputs and outputs to values, in host or device memory, for
// RunWithBinding (OrtIoBinding). Bound values must stay alive until unbound or the binding is
// released. Not safe for concurrent use.
type IoBinding struct {
	p *C.OrtIoBinding
	s *Session
}

// NewIoBinding creates an empty binding for s; release it before s.
func (s *Session) NewIoBinding() (*IoBinding, error) {
	b := IoBinding{s: s}
	if err := check(C.vort_create_io_binding(s.p, &b.p), "CreateIoBinding", ""); err != nil {
		return nil, err
	}
	return &b, nil
}

// BindInput binds the named input to v (BindInput).
func (b *IoBinding) BindInput(name string, v *Value) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return check(C.vort_bind_input(b.p, cs, v.p), "BindInput", name)
}

// BindOutput binds the named output to the preallocated v, whose shape must match the result
// (BindOutput).
func (b *IoBinding) BindOutput(name string, v *Value) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return check(C.vort_bind_output(b.p, cs, v.p), "BindOutput", name)
}

// BindOutputToDevice lets ONNX Runtime allocate the named output, at each run, in the memory m
// describes (BindOutputToDevice); read it with Outputs.
func (b *IoBinding) BindOutputToDevice(name string, m *MemoryInfo) error {
	cs := C.CString(name)
	defer C.free(unsafe.Pointer(cs))
	return check(C.vort_bind_output_to_device(b.p, cs, m.p), "BindOutputToDevice", name)
}

// Run runs the session on the bound values (RunWithBinding) with default run options: ONNX
// Runtime waits for its execution providers' streams before returning. It allocates nothing on
// the Go heap.
func (b *IoBinding) Run() error { return b.RunWith(nil) }

// RunWith is Run with run options o (nil: defaults).
func (b *IoBinding) RunWith(o *RunOptions) error {
	var op *C.OrtRunOptions
	if o != nil {
		op = o.p
	}
	return check(C.vort_run_with_binding(b.s.p, op, b.p), "RunWithBinding", "")
}

// SynchronizeInputs waits for the providers' pending input copies (SynchronizeBoundInputs).
func (b *IoBinding) SynchronizeInputs() error {
	return check(C.vort_sync_bound_inputs(b.p), "SynchronizeBoundInputs", "")
}

// SynchronizeOutputs waits until the bound outputs are written (SynchronizeBoundOutputs).
func (b *IoBinding) SynchronizeOutputs() error {
	return check(C.vort_sync_bound_outputs(b.p), "SynchronizeBoundOutputs", "")
}

// Outputs returns the bound output values in binding order (GetBoundOutputValues); the caller
// owns them and releases each.
func (b *IoBinding) Outputs() ([]*Value, error) {
	var arr **C.OrtValue
	var n C.size_t
	if err := check(C.vort_bound_outputs(b.p, &arr, &n), "GetBoundOutputValues", ""); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	defer C.free(unsafe.Pointer(arr))
	out := make([]*Value, int(n))
	for i, p := range unsafe.Slice(arr, int(n)) {
		out[i] = &Value{p: p}
	}
	return out, nil
}

// ClearInputs unbinds all inputs (ClearBoundInputs).
func (b *IoBinding) ClearInputs() { C.vort_clear_bound_inputs(b.p) }

// ClearOutputs unbinds all outputs (ClearBoundOutputs).
func (b *IoBinding) ClearOutputs() { C.vort_clear_bound_outputs(b.p) }

// Release frees the binding (not the bound values). Idempotent.
func (b *IoBinding) Release() {
	if b != nil && b.p != nil {
		C.vort_release_io_binding(b.p)
		b.p = nil
	}
}
