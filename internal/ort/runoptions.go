package ort

/*
#include "ort.h"
*/
import "C"

import "unsafe"

// Run configuration keys (onnxruntime_run_options_config_keys.h).
const (
	// RunDisableSyncProviders, "1": Run returns once the work is queued on the execution
	// providers' streams instead of waiting for it; the caller synchronizes its stream before
	// reading outputs.
	RunDisableSyncProviders = "disable_synchronize_execution_providers"
	// RunGraphID selects which captured CUDA graph a run replays ("gpu_graph_id", an integer;
	// -1 runs without a graph).
	RunGraphID = "gpu_graph_id"
)

// RunOptions are per-run settings (OrtRunOptions). Not safe for concurrent modification.
type RunOptions struct{ p *C.OrtRunOptions }

// NewRunOptions returns run options holding the config entries kv (key, value, key, value...).
func NewRunOptions(kv ...string) (*RunOptions, error) {
	if err := ready(); err != nil {
		return nil, err
	}
	o := &RunOptions{}
	if err := check(C.vort_create_run_options(&o.p), "CreateRunOptions", ""); err != nil {
		return nil, err
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if err := o.Set(kv[i], kv[i+1]); err != nil {
			o.Release()
			return nil, err
		}
	}
	return o, nil
}

// Set adds or replaces a config entry (AddRunConfigEntry).
func (o *RunOptions) Set(key, value string) error {
	k, v := C.CString(key), C.CString(value)
	defer C.free(unsafe.Pointer(k))
	defer C.free(unsafe.Pointer(v))
	return check(C.vort_add_run_config_entry(o.p, k, v), "AddRunConfigEntry", key)
}

// Release frees the options. Idempotent.
func (o *RunOptions) Release() {
	if o != nil && o.p != nil {
		C.vort_release_run_options(o.p)
		o.p = nil
	}
}
