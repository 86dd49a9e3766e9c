// Thin C shims over ONNX Runtime's OrtApi function table, loaded at run time with dlopen.
// Each shim returns the OrtStatus* of the call (NULL on success); the Go side turns it into an
// error carrying ORT's message and frees it.
#ifndef VINFER_ORT_H
#define VINFER_ORT_H
#include <stdlib.h>
#include "onnxruntime_c_api.h"

const char* vort_load(const char* path);
const char* vort_version(void);
const char* vort_status_message(OrtStatus* s);
int vort_status_code(OrtStatus* s);
void vort_release_status(OrtStatus* s);

OrtStatus* vort_create_env(int level, const char* id, OrtEnv** out);
void vort_release_env(OrtEnv* e);

OrtStatus* vort_create_session_options(OrtSessionOptions** out);
void vort_release_session_options(OrtSessionOptions* o);
OrtStatus* vort_set_intra_threads(OrtSessionOptions* o, int n);
OrtStatus* vort_set_inter_threads(OrtSessionOptions* o, int n);
OrtStatus* vort_set_opt_level(OrtSessionOptions* o, int level);
OrtStatus* vort_set_optimized_path(OrtSessionOptions* o, const char* path);
OrtStatus* vort_add_config_entry(OrtSessionOptions* o, const char* k, const char* v);
OrtStatus* vort_set_execution_mode(OrtSessionOptions* o, int mode);

OrtStatus* vort_create_session(OrtEnv* env, const char* path, OrtSessionOptions* o, OrtSession** out);
OrtStatus* vort_create_session_from_array(OrtEnv* env, const void* data, size_t n, OrtSessionOptions* o, OrtSession** out);
void vort_release_session(OrtSession* s);
OrtStatus* vort_io_count(OrtSession* s, int output, size_t* n);
// vort_io_info returns the name (malloc'ed, caller frees), element type and up to 8 dims.
OrtStatus* vort_io_info(OrtSession* s, int output, size_t i, char** name, int* elem, int64_t* dims, size_t* ndims);

OrtStatus* vort_create_cpu_memory_info(OrtMemoryInfo** out);
OrtStatus* vort_create_memory_info(const char* name, int alloc_type, int id, int mem_type, OrtMemoryInfo** out);
void vort_release_memory_info(OrtMemoryInfo* m);
OrtStatus* vort_create_tensor(const OrtMemoryInfo* m, void* data, size_t bytes, const int64_t* shape, size_t ndim, int elem, OrtValue** out);
void vort_release_value(OrtValue* v);
OrtStatus* vort_run(OrtSession* s, const char* const* in_names, const OrtValue* const* in, size_t nin,
                    const char* const* out_names, size_t nout, OrtValue** out);
OrtStatus* vort_tensor_shape(const OrtValue* v, int64_t* dims, size_t* ndims);
OrtStatus* vort_tensor_data(OrtValue* v, void** out);

OrtStatus* vort_create_io_binding(OrtSession* s, OrtIoBinding** out);
void vort_release_io_binding(OrtIoBinding* b);
OrtStatus* vort_bind_input(OrtIoBinding* b, const char* name, const OrtValue* v);
OrtStatus* vort_bind_output(OrtIoBinding* b, const char* name, const OrtValue* v);
OrtStatus* vort_bind_output_to_device(OrtIoBinding* b, const char* name, const OrtMemoryInfo* m);
OrtStatus* vort_run_with_binding(OrtSession* s, const OrtIoBinding* b);
void vort_clear_bound(OrtIoBinding* b);

OrtStatus* vort_register_ep_library(OrtEnv* env, const char* name, const char* path);
OrtStatus* vort_unregister_ep_library(OrtEnv* env, const char* name);
OrtStatus* vort_get_ep_devices(const OrtEnv* env, const OrtEpDevice* const** devs, size_t* n);
const char* vort_ep_device_name(const OrtEpDevice* d);
const char* vort_ep_device_vendor(const OrtEpDevice* d);
OrtStatus* vort_append_ep_v2(OrtSessionOptions* o, OrtEnv* env, const OrtEpDevice* d,
                             const char* const* keys, const char* const* values, size_t n);
#endif
