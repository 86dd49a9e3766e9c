// Minimal ONNX Runtime C API shim for vinfer-bench: ORT loaded with dlopen, the CUDA execution
// provider as a plugin EP (RegisterExecutionProviderLibrary, GetEpDevices,
// SessionOptionsAppendExecutionProvider_V2) on the caller's CUDA stream, inputs and outputs
// bound to caller-owned device memory (IoBinding).
#ifndef VINFER_BENCH_ORTCUDA_H
#define VINFER_BENCH_ORTCUDA_H
#include <stdint.h>

typedef struct vo_session vo_session;

// vo_init loads the ORT core library, creates the environment and registers the CUDA EP
// plugin library once per process. Returns 0 or -1 with a message in err.
int vo_init(const char *ort_lib, const char *ep_lib, char *err, int errlen);
// vo_open creates a session of model on CUDA device `device` using `stream` as the compute
// stream, with one input [n,C,H,W] float32 at in_dev and one output [n,...] float32 at out_dev
// (room for max_batch items each), pre-binding OrtValues for every n in 1..max_batch.
int vo_open(vo_session **out, const char *model, int device, uintptr_t stream, uintptr_t in_dev,
	uintptr_t out_dev, int max_batch, char *err, int errlen);
// vo_out_elems returns the output elements per batch item.
int64_t vo_out_elems(vo_session *s);
// vo_run runs the first n items (RunWithBinding).
int vo_run(vo_session *s, int n, char *err, int errlen);
void vo_close(vo_session *s);
#endif
