#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "ort.h"

static const OrtApiBase* base;
static const OrtApi* api;
static char loaderr[1024];

// vort_load opens the library at path and fetches API version ORT_API_VERSION. It returns NULL
// on success or a message (valid until the next call). A failed call changes nothing.
// RTLD_GLOBAL lets plugin execution provider libraries that link against libonnxruntime.so.1
// resolve to this copy.
const char* vort_load(const char* path) {
	void* lib = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		snprintf(loaderr, sizeof loaderr, "%s", dlerror());
		return loaderr;
	}
	const OrtApiBase* (*get)(void) = (const OrtApiBase* (*)(void))dlsym(lib, "OrtGetApiBase");
	if (!get) {
		snprintf(loaderr, sizeof loaderr, "no symbol OrtGetApiBase: not an ONNX Runtime library");
		dlclose(lib);
		return loaderr;
	}
	const OrtApiBase* b = get();
	const OrtApi* a = b ? b->GetApi(ORT_API_VERSION) : NULL;
	if (!a) {
		snprintf(loaderr, sizeof loaderr, "ONNX Runtime %s does not provide C API version %d (need 1.24 or later)",
		         b ? b->GetVersionString() : "?", ORT_API_VERSION);
		dlclose(lib);
		return loaderr;
	}
	base = b;
	api = a;
	return NULL;
}

const char* vort_version(void) { return base ? base->GetVersionString() : ""; }
const char* vort_status_message(OrtStatus* s) { return api->GetErrorMessage(s); }
int vort_status_code(OrtStatus* s) { return (int)api->GetErrorCode(s); }
void vort_release_status(OrtStatus* s) { api->ReleaseStatus(s); }

OrtStatus* vort_create_env(int level, const char* id, OrtEnv** out) {
	OrtStatus* st = api->CreateEnv((OrtLoggingLevel)level, id, out);
	if (st == NULL) {
		// No usage telemetry leaves the process (the npm build carries Microsoft's collector).
		OrtStatus* t = api->DisableTelemetryEvents(*out);
		if (t != NULL) api->ReleaseStatus(t);
	}
	return st;
}
void vort_release_env(OrtEnv* e) { api->ReleaseEnv(e); }
OrtStatus* vort_register_ep_library(OrtEnv* env, const char* name, const char* path) {
	return api->RegisterExecutionProviderLibrary(env, name, path);
}
OrtStatus* vort_unregister_ep_library(OrtEnv* env, const char* name) {
	return api->UnregisterExecutionProviderLibrary(env, name);
}
OrtStatus* vort_get_ep_devices(const OrtEnv* env, const OrtEpDevice* const** devs, size_t* n) {
	return api->GetEpDevices(env, devs, n);
}
const char* vort_ep_device_ep_name(const OrtEpDevice* d) { return api->EpDevice_EpName(d); }
const char* vort_ep_device_ep_vendor(const OrtEpDevice* d) { return api->EpDevice_EpVendor(d); }
const OrtKeyValuePairs* vort_ep_device_ep_metadata(const OrtEpDevice* d) { return api->EpDevice_EpMetadata(d); }
const OrtKeyValuePairs* vort_ep_device_ep_options(const OrtEpDevice* d) { return api->EpDevice_EpOptions(d); }
const OrtHardwareDevice* vort_ep_device_device(const OrtEpDevice* d) { return api->EpDevice_Device(d); }
int vort_hw_type(const OrtHardwareDevice* h) { return (int)api->HardwareDevice_Type(h); }
uint32_t vort_hw_vendor_id(const OrtHardwareDevice* h) { return api->HardwareDevice_VendorId(h); }
uint32_t vort_hw_device_id(const OrtHardwareDevice* h) { return api->HardwareDevice_DeviceId(h); }
const char* vort_hw_vendor(const OrtHardwareDevice* h) { return api->HardwareDevice_Vendor(h); }
const OrtKeyValuePairs* vort_hw_metadata(const OrtHardwareDevice* h) { return api->HardwareDevice_Metadata(h); }
void vort_kv_pairs(const OrtKeyValuePairs* kv, const char* const** keys, const char* const** values, size_t* n) {
	*n = 0;
	if (kv) api->GetKeyValuePairs(kv, keys, values, n);
}

OrtStatus* vort_create_session_options(OrtSessionOptions** out) { return api->CreateSessionOptions(out); }
void vort_release_session_options(OrtSessionOptions* o) { api->ReleaseSessionOptions(o); }
OrtStatus* vort_set_intra_threads(OrtSessionOptions* o, int n) { return api->SetIntraOpNumThreads(o, n); }
OrtStatus* vort_set_inter_threads(OrtSessionOptions* o, int n) { return api->SetInterOpNumThreads(o, n); }
OrtStatus* vort_set_opt_level(OrtSessionOptions* o, int l) {
	return api->SetSessionGraphOptimizationLevel(o, (GraphOptimizationLevel)l);
}
OrtStatus* vort_set_optimized_path(OrtSessionOptions* o, const char* p) { return api->SetOptimizedModelFilePath(o, p); }
OrtStatus* vort_add_config_entry(OrtSessionOptions* o, const char* k, const char* v) {
	return api->AddSessionConfigEntry(o, k, v);
}
OrtStatus* vort_set_execution_mode(OrtSessionOptions* o, int m) {
	return api->SetSessionExecutionMode(o, (ExecutionMode)m);
}
OrtStatus* vort_append_ep_v2(OrtSessionOptions* o, OrtEnv* env, const OrtEpDevice* const* devs, size_t ndevs,
                             const char* const* keys, const char* const* values, size_t n) {
	return api->SessionOptionsAppendExecutionProvider_V2(o, env, devs, ndevs, keys, values, n);
}

OrtStatus* vort_create_session(OrtEnv* env, const char* path, OrtSessionOptions* o, OrtSession** out) {
	return api->CreateSession(env, path, o, out);
}
OrtStatus* vort_create_session_from_array(OrtEnv* env, const void* data, size_t n, OrtSessionOptions* o,
                                          OrtSession** out) {
	return api->CreateSessionFromArray(env, data, n, o, out);
}
void vort_release_session(OrtSession* s) { api->ReleaseSession(s); }
OrtStatus* vort_io_count(OrtSession* s, int output, size_t* n) {
	return output ? api->SessionGetOutputCount(s, n) : api->SessionGetInputCount(s, n);
}
OrtStatus* vort_io_name(OrtSession* s, int output, size_t i, char** name) {
	OrtAllocator* alloc;
	OrtStatus* st = api->GetAllocatorWithDefaultOptions(&alloc);
	if (st) return st;
	char* n = NULL;
	st = output ? api->SessionGetOutputName(s, i, alloc, &n) : api->SessionGetInputName(s, i, alloc, &n);
	if (st) return st;
	*name = strdup(n);
	OrtStatus* fs = api->AllocatorFree(alloc, n);
	if (fs) api->ReleaseStatus(fs);
	return NULL;
}
OrtStatus* vort_io_type_info(OrtSession* s, int output, size_t i, OrtTypeInfo** out) {
	return output ? api->SessionGetOutputTypeInfo(s, i, out) : api->SessionGetInputTypeInfo(s, i, out);
}
void vort_release_type_info(OrtTypeInfo* t) { api->ReleaseTypeInfo(t); }
OrtStatus* vort_type_tensor_info(const OrtTypeInfo* t, const OrtTensorTypeAndShapeInfo** out) {
	return api->CastTypeInfoToTensorInfo(t, out);
}
OrtStatus* vort_tensor_info(const OrtTensorTypeAndShapeInfo* t, int* elem, size_t* ndims) {
	ONNXTensorElementDataType e;
	OrtStatus* st = api->GetTensorElementType(t, &e);
	if (st) return st;
	*elem = (int)e;
	return api->GetDimensionsCount(t, ndims);
}
OrtStatus* vort_tensor_info_dims(const OrtTensorTypeAndShapeInfo* t, int64_t* dims, const char** symbols, size_t n) {
	OrtStatus* st = api->GetDimensions(t, dims, n);
	if (st) return st;
	return api->GetSymbolicDimensions(t, symbols, n);
}
OrtStatus* vort_run(OrtSession* s, const char* const* in_names, const OrtValue* const* in, size_t nin,
                    const char* const* out_names, size_t nout, OrtValue** out) {
	return api->Run(s, NULL, in_names, in, nin, out_names, nout, out);
}

OrtStatus* vort_create_cpu_memory_info(OrtMemoryInfo** out) {
	return api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, out);
}
OrtStatus* vort_create_memory_info(const char* name, int at, int id, int mt, OrtMemoryInfo** out) {
	return api->CreateMemoryInfo(name, (OrtAllocatorType)at, id, (OrtMemType)mt, out);
}
void vort_release_memory_info(OrtMemoryInfo* m) { api->ReleaseMemoryInfo(m); }
OrtStatus* vort_create_tensor(const OrtMemoryInfo* m, void* data, size_t bytes, const int64_t* shape, size_t ndim,
                              int elem, OrtValue** out) {
	return api->CreateTensorWithDataAsOrtValue(m, data, bytes, shape, ndim, (ONNXTensorElementDataType)elem, out);
}
void vort_release_value(OrtValue* v) { api->ReleaseValue(v); }

vort_shape_result vort_value_shape(const OrtValue* v, int64_t* dims, size_t cap) {
	vort_shape_result r = {NULL, 0, 0};
	OrtTensorTypeAndShapeInfo* info;
	r.status = api->GetTensorTypeAndShape(v, &info);
	if (r.status) return r;
	ONNXTensorElementDataType e;
	r.status = api->GetTensorElementType(info, &e);
	r.elem = (int)e;
	if (!r.status) r.status = api->GetDimensionsCount(info, &r.ndims);
	if (!r.status) r.status = api->GetDimensions(info, dims, r.ndims < cap ? r.ndims : cap);
	api->ReleaseTensorTypeAndShapeInfo(info);
	return r;
}
vort_data_result vort_value_data(OrtValue* v) {
	vort_data_result r = {NULL, NULL};
	r.status = api->GetTensorMutableData(v, &r.data);
	return r;
}

OrtStatus* vort_create_io_binding(OrtSession* s, OrtIoBinding** out) { return api->CreateIoBinding(s, out); }
void vort_release_io_binding(OrtIoBinding* b) { api->ReleaseIoBinding(b); }
OrtStatus* vort_bind_input(OrtIoBinding* b, const char* n, const OrtValue* v) { return api->BindInput(b, n, v); }
OrtStatus* vort_bind_output(OrtIoBinding* b, const char* n, const OrtValue* v) { return api->BindOutput(b, n, v); }
OrtStatus* vort_bind_output_to_device(OrtIoBinding* b, const char* n, const OrtMemoryInfo* m) {
	return api->BindOutputToDevice(b, n, m);
}
OrtStatus* vort_run_with_binding(OrtSession* s, const OrtRunOptions* o, const OrtIoBinding* b) {
	return api->RunWithBinding(s, o, b);
}
OrtStatus* vort_create_run_options(OrtRunOptions** out) { return api->CreateRunOptions(out); }
OrtStatus* vort_add_run_config_entry(OrtRunOptions* o, const char* k, const char* v) {
	return api->AddRunConfigEntry(o, k, v);
}
void vort_release_run_options(OrtRunOptions* o) { api->ReleaseRunOptions(o); }
void vort_clear_bound_inputs(OrtIoBinding* b) { api->ClearBoundInputs(b); }
void vort_clear_bound_outputs(OrtIoBinding* b) { api->ClearBoundOutputs(b); }
OrtStatus* vort_sync_bound_inputs(OrtIoBinding* b) { return api->SynchronizeBoundInputs(b); }
OrtStatus* vort_sync_bound_outputs(OrtIoBinding* b) { return api->SynchronizeBoundOutputs(b); }
OrtStatus* vort_bound_outputs(const OrtIoBinding* b, OrtValue*** values, size_t* n) {
	OrtAllocator* alloc;
	OrtStatus* st = api->GetAllocatorWithDefaultOptions(&alloc);
	if (st) return st;
	OrtValue** vs = NULL;
	*n = 0;
	*values = NULL;
	st = api->GetBoundOutputValues(b, alloc, &vs, n);
	if (st || *n == 0) return st;
	*values = malloc(*n * sizeof(OrtValue*));
	if (*values) {
		memcpy(*values, vs, *n * sizeof(OrtValue*));
	} else {
		for (size_t i = 0; i < *n; i++) api->ReleaseValue(vs[i]);
		*n = 0;
		st = api->CreateStatus(ORT_FAIL, "out of memory copying bound output values");
	}
	OrtStatus* fs = api->AllocatorFree(alloc, vs);
	if (fs) api->ReleaseStatus(fs);
	return st;
}
