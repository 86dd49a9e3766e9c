// Thin C shims over ONNX Runtime's OrtApi function table (onnxruntime_c_api.h, ORT_API_VERSION
// 24), which vort_load fetches from a library opened with dlopen. Shims returning OrtStatus*
// return NULL on success; the Go side turns a status into an *ort.Error and releases it.
// Shims called on the hot path take and return only C values and C pointers, so that no Go
// variable escapes to the heap when they are called.
#ifndef VINFER_ORT_H
#define VINFER_ORT_H
#include <stdint.h>
#include <stdlib.h>
#include "onnxruntime_c_api.h"

// Library.
const char* vort_load(const char* path);
const char* vort_version(void);
const char* vort_status_message(OrtStatus* s);
int vort_status_code(OrtStatus* s);
void vort_release_status(OrtStatus* s);

// Environment and plugin execution providers.
OrtStatus* vort_create_env(int level, const char* id, OrtEnv** out);
void vort_release_env(OrtEnv* e);
OrtStatus* vort_register_ep_library(OrtEnv* env, const char* name, const char* path);
OrtStatus* vort_unregister_ep_library(OrtEnv* env, const char* name);
OrtStatus* vort_get_ep_devices(const OrtEnv* env, const OrtEpDevice* const** devs, size_t* n);
const char* vort_ep_device_ep_name(const OrtEpDevice* d);
const char* vort_ep_device_ep_vendor(const OrtEpDevice* d);
const OrtKeyValuePairs* vort_ep_device_ep_metadata(const OrtEpDevice* d);
const OrtKeyValuePairs* vort_ep_device_ep_options(const OrtEpDevice* d);
const OrtHardwareDevice* vort_ep_device_device(const OrtEpDevice* d);
int vort_hw_type(const OrtHardwareDevice* h);
uint32_t vort_hw_vendor_id(const OrtHardwareDevice* h);
uint32_t vort_hw_device_id(const OrtHardwareDevice* h);
const char* vort_hw_vendor(const OrtHardwareDevice* h);
const OrtKeyValuePairs* vort_hw_metadata(const OrtHardwareDevice* h);
void vort_kv_pairs(const OrtKeyValuePairs* kv, const char* const** keys, const char* const** values, size_t* n);

// Session options.
OrtStatus* vort_create_session_options(OrtSessionOptions** out);
void vort_release_session_options(OrtSessionOptions* o);
OrtStatus* vort_set_intra_threads(OrtSessionOptions* o, int n);
OrtStatus* vort_set_inter_threads(OrtSessionOptions* o, int n);
OrtStatus* vort_set_opt_level(OrtSessionOptions* o, int level);
OrtStatus* vort_set_optimized_path(OrtSessionOptions* o, const char* path);
OrtStatus* vort_add_config_entry(OrtSessionOptions* o, const char* k, const char* v);
OrtStatus* vort_set_execution_mode(OrtSessionOptions* o, int mode);
OrtStatus* vort_append_ep_v2(OrtSessionOptions* o, OrtEnv* env, const OrtEpDevice* const* devs, size_t ndevs,
                             const char* const* keys, const char* const* values, size_t n);

// Sessions.
OrtStatus* vort_create_session(OrtEnv* env, const char* path, OrtSessionOptions* o, OrtSession** out);
OrtStatus* vort_create_session_from_array(OrtEnv* env, const void* data, size_t n, OrtSessionOptions* o,
                                          OrtSession** out);
void vort_release_session(OrtSession* s);
OrtStatus* vort_io_count(OrtSession* s, int output, size_t* n);
// vort_io_name returns the name of input or output i in malloc'ed memory the caller frees.
OrtStatus* vort_io_name(OrtSession* s, int output, size_t i, char** name);
OrtStatus* vort_io_type_info(OrtSession* s, int output, size_t i, OrtTypeInfo** out);
void vort_release_type_info(OrtTypeInfo* t);
// vort_type_tensor_info returns the tensor info of t, or NULL (and no error) when t is not a tensor.
OrtStatus* vort_type_tensor_info(const OrtTypeInfo* t, const OrtTensorTypeAndShapeInfo** out);
OrtStatus* vort_tensor_info(const OrtTensorTypeAndShapeInfo* t, int* elem, size_t* ndims);
OrtStatus* vort_tensor_info_dims(const OrtTensorTypeAndShapeInfo* t, int64_t* dims, const char** symbols,
                                 size_t n);
OrtStatus* vort_run(OrtSession* s, const char* const* in_names, const OrtValue* const* in, size_t nin,
                    const char* const* out_names, size_t nout, OrtValue** out);

// Memory and values.
OrtStatus* vort_create_cpu_memory_info(OrtMemoryInfo** out);
OrtStatus* vort_create_memory_info(const char* name, int alloc_type, int id, int mem_type, OrtMemoryInfo** out);
void vort_release_memory_info(OrtMemoryInfo* m);
OrtStatus* vort_create_tensor(const OrtMemoryInfo* m, void* data, size_t bytes, const int64_t* shape, size_t ndim,
                              int elem, OrtValue** out);
void vort_release_value(OrtValue* v);

// vort_shape_result is returned by value so that hot-path callers pass no pointer to a Go
// variable (which would make it escape to the heap).
typedef struct {
	OrtStatus* status;
	size_t ndims;  // the tensor's rank; at most cap dims were written
	int elem;      // ONNXTensorElementDataType
} vort_shape_result;
vort_shape_result vort_value_shape(const OrtValue* v, int64_t* dims, size_t cap);
typedef struct {
	OrtStatus* status;
	void* data;
} vort_data_result;
vort_data_result vort_value_data(OrtValue* v);

// IO binding.
OrtStatus* vort_create_io_binding(OrtSession* s, OrtIoBinding** out);
void vort_release_io_binding(OrtIoBinding* b);
OrtStatus* vort_bind_input(OrtIoBinding* b, const char* name, const OrtValue* v);
OrtStatus* vort_bind_output(OrtIoBinding* b, const char* name, const OrtValue* v);
OrtStatus* vort_bind_output_to_device(OrtIoBinding* b, const char* name, const OrtMemoryInfo* m);
OrtStatus* vort_run_with_binding(OrtSession* s, const OrtRunOptions* o, const OrtIoBinding* b);
OrtStatus* vort_create_run_options(OrtRunOptions** out);
OrtStatus* vort_add_run_config_entry(OrtRunOptions* o, const char* key, const char* value);
void vort_release_run_options(OrtRunOptions* o);
void vort_clear_bound_inputs(OrtIoBinding* b);
void vort_clear_bound_outputs(OrtIoBinding* b);
OrtStatus* vort_sync_bound_inputs(OrtIoBinding* b);
OrtStatus* vort_sync_bound_outputs(OrtIoBinding* b);
// vort_bound_outputs returns the bound output values in a malloc'ed array the caller frees
// (the values are the caller's to release).
OrtStatus* vort_bound_outputs(const OrtIoBinding* b, OrtValue*** values, size_t* n);
#endif
