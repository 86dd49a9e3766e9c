package ort

/*
#include "ort.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Graph optimization levels (GraphOptimizationLevel).
const (
	OptDisable  = 0
	OptBasic    = 1
	OptExtended = 2
	OptLayout   = 3
	OptAll      = 99
)

// SessionOptions configure sessions before they are created (OrtSessionOptions).
type SessionOptions struct{ p *C.OrtSessionOptions }

// NewSessionOptions returns ONNX Runtime's default options.
func NewSessionOptions() (*SessionOptions, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	var o SessionOptions
	if err := check(C.vort_create_session_options(&o.p), "CreateSessionOptions", ""); err != nil {
		return nil, err
	}
	return &o, nil
}

// Release frees the options; sessions created from them stay valid. Idempotent.
func (o *SessionOptions) Release() {
	if o != nil && o.p != nil {
		C.vort_release_session_options(o.p)
		o.p = nil
	}
}

// SetIntraOpThreads sets the threads one operator may use (0: ONNX Runtime's default, one per
// physical core).
func (o *SessionOptions) SetIntraOpThreads(n int) error {
	return check(C.vort_set_intra_threads(o.p, C.int(n)), "SetIntraOpNumThreads", "")
}

// SetInterOpThreads sets the threads running independent operators in parallel execution mode.
func (o *SessionOptions) SetInterOpThreads(n int) error {
	return check(C.vort_set_inter_threads(o.p, C.int(n)), "SetInterOpNumThreads", "")
}

// SetGraphOptimization sets the graph optimization level (OptDisable … OptAll).
func (o *SessionOptions) SetGraphOptimization(level int) error {
	return check(C.vort_set_opt_level(o.p, C.int(level)), "SetSessionGraphOptimizationLevel", "")
}

// SetOptimizedModelPath makes session creation write the optimized graph (ONNX format) to
// path; a later session can load it with OptDisable and skip the optimization work.
func (o *SessionOptions) SetOptimizedModelPath(path string) error {
	cs := C.CString(path)
	defer C.free(unsafe.Pointer(cs))
	return check(C.vort_set_optimized_path(o.p, cs), "SetOptimizedModelFilePath", path)
}

// AddConfigEntry sets a session configuration key, e.g. "session.intra_op.allow_spinning" =
// "0" (keys: onnxruntime_session_options_config_keys.h).
func (o *SessionOptions) AddConfigEntry(key, value string) error {
	ck, cv := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(ck))
	defer C.free(unsafe.Pointer(cv))
	return check(C.vort_add_config_entry(o.p, ck, cv), "AddSessionConfigEntry", key)
}

// SetParallelExecution selects ORT_PARALLEL (true: independent operators run concurrently on
// the inter-op threads) or ORT_SEQUENTIAL (false, the default) execution.
func (o *SessionOptions) SetParallelExecution(on bool) error {
	m := 0
	if on {
		m = 1
	}
	return check(C.vort_set_execution_mode(o.p, C.int(m)), "SetSessionExecutionMode", "")
}

// AppendExecutionProvider adds the execution provider of devs (from Env.EpDevices, all of the
// same provider) with provider options, e.g. {"device_id": "0", "user_compute_stream": "…"}
// (SessionOptionsAppendExecutionProvider_V2). Providers are tried in the order appended, the
// CPU provider last.
func (o *SessionOptions) AppendExecutionProvider(env *Env, devs []EpDevice, options map[string]string) error {
	if len(devs) == 0 {
		return fmt.Errorf("ort: AppendExecutionProvider: no device given")
	}
	keys := sortedKeys(options)
	n := len(keys)
	ptrs := (**C.char)(C.calloc(C.size_t(2*n+1), C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(ptrs))
	kv := unsafe.Slice(ptrs, 2*n)
	for i, k := range keys {
		kv[i] = C.CString(k)
		kv[n+i] = C.CString(options[k])
	}
	defer func() {
		for _, p := range kv {
			C.free(unsafe.Pointer(p))
		}
	}()
	// The device array must be C memory too: it holds C pointers passed to C.
	cdevs := (**C.OrtEpDevice)(C.calloc(C.size_t(len(devs)), C.size_t(unsafe.Sizeof(uintptr(0)))))
	defer C.free(unsafe.Pointer(cdevs))
	for i, d := range devs {
		unsafe.Slice(cdevs, len(devs))[i] = d.p
	}
	var vals **C.char
	if n > 0 {
		vals = &kv[n]
	}
	return check(C.vort_append_ep_v2(o.p, env.p, cdevs, C.size_t(len(devs)), ptrs, vals, C.size_t(n)),
		"SessionOptionsAppendExecutionProvider_V2", devs[0].EpName)
}
