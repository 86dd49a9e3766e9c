#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "ort.h"

static const OrtApiBase* base;
static const OrtApi* api;
static char loaderr[512];

const char* vort_load(const char* path) {
	void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		snprintf(loaderr, sizeof loaderr, "%s", dlerror());
		return loaderr;
	}
	const OrtApiBase* (*get)(void) = (const OrtApiBase* (*)(void))dlsym(lib, "OrtGetApiBase");
	if (!get) {
		snprintf(loaderr, sizeof loaderr, "%s has no OrtGetApiBase: not an ONNX Runtime library", path);
		dlclose(lib);
		return loaderr;
	}
	base = get();
	api = base->GetApi(ORT_API_VERSION);
	if (!api) {
		snprintf(loaderr, sizeof loaderr, "ONNX Runtime %s does not provide C API version %d (need 1.24 or later)",
		         base->GetVersionString(), ORT_API_VERSION);
		dlclose(lib);
		base = NULL;
		return loaderr;
	}
	return NULL;
}

const char* vort_version(void) { return base ? base->GetVersionString() : ""; }
const char* vort_status_message(OrtStatus* s) { return api->GetErrorMessage(s); }
int vort_status_code(OrtStatus* s) { return (int)api->GetErrorCode(s); }
void vort_release_status(OrtStatus* s) { api->ReleaseStatus(s); }

OrtStatus* vort_create_env(int level, const char* id, OrtEnv** out) { return api->CreateEnv((OrtLoggingLevel)level, id, out); }
void vort_release_env(OrtEnv* e) { api->ReleaseEnv(e); }

OrtStatus* vort_create_session_options(OrtSessionOptions** out) { return api->CreateSessionOptions(out); }
void vort_release_session_options(OrtSessionOptions* o) { api->ReleaseSessionOptions(o); }
OrtStatus* vort_set_intra_threads(OrtSessionOptions* o, int n) { return api->SetIntraOpNumThreads(o, n); }
OrtStatus* vort_set_inter_threads(OrtSessionOptions* o, int n) { return api->SetInterOpNumThreads(o, n); }
OrtStatus* vort_set_opt_level(OrtSessionOptions* o, int l) { return api->SetSessionGraphOptimizationLevel(o, (GraphOptimizationLevel)l); }
OrtStatus* vort_set_optimized_path(OrtSessionOptions* o, const char* p) { return api->SetOptimizedModelFilePath(o, p); }
OrtStatus* vort_add_config_entry(OrtSessionOptions* o, const char* k, const char* v) { return api->AddSessionConfigEntry(o, k, v); }
OrtStatus* vort_set_execution_mode(OrtSessionOptions* o, int m) { return api->SetSessionExecutionMode(o, (ExecutionMode)m); }

OrtStatus* vort_create_session(OrtEnv* env, const char* path, OrtSessionOptions* o, OrtSession** out) {
	return api->CreateSession(env, path, o, out);
}
OrtStatus* vort_create_session_from_array(OrtEnv* env, const void* data, size_t n, OrtSessionOptions* o, OrtSession** out) {
	return api->CreateSessionFromArray(env, data, n, o, out);
}
void vort_release_session(OrtSession* s) { api->ReleaseSession(s); }

OrtStatus* vort_io_count(OrtSession* s, int output, size_t* n) {
	return output ? api->SessionGetOutputCount(s, n) : api->SessionGetInputCount(s, n);
}

OrtStatus* vort_io_info(OrtSession* s, int output, size_t i, char** name, int* elem, int64_t* dims, size_t* ndims) {
	OrtAllocator* alloc;
	OrtStatus* st = api->GetAllocatorWithDefaultOptions(&alloc);
	if (st) return st;
	char* n = NULL;
	st = output ? api->SessionGetOutputName(s, i, alloc, &n) : api->SessionGetInputName(s, i, alloc, &n);
	if (st) return st;
	*name = strdup(n);
	OrtStatus* fs = api->AllocatorFree(alloc, n);
	if (fs) api->ReleaseStatus(fs);
	OrtTypeInfo* ti = NULL;
	st = output ? api->SessionGetOutputTypeInfo(s, i, &ti) : api->SessionGetInputTypeInfo(s, i, &ti);
	if (st) return st;
	const OrtTensorTypeAndShapeInfo* tsi = NULL;
	st = api->CastTypeInfoToTensorInfo(ti, &tsi);
	if (!st && !tsi) { *elem = 0; *ndims = 0; api->ReleaseTypeInfo(ti); return NULL; } /* not a tensor */
	if (!st) {
		ONNXTensorElementDataType t;
		st = api->GetTensorElementType(tsi, &t);
		*elem = (int)t;
	}
	size_t nd = 0;
	if (!st) st = api->GetDimensionsCount(tsi, &nd);
	if (!st) {
		if (nd > *ndims) nd = *ndims;
		st = api->GetDimensions(tsi, dims, nd);
		*ndims = nd;
	}
	api->ReleaseTypeInfo(ti);
	return st;
}

OrtStatus* vort_create_cpu_memory_info(OrtMemoryInfo** out) { return api->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, out); }
OrtStatus* vort_create_memory_info(const char* name, int at, int id, int mt, OrtMemoryInfo** out) {
	return api->CreateMemoryInfo(name, (OrtAllocatorType)at, id, (OrtMemType)mt, out);
}
void vort_release_memory_info(OrtMemoryInfo* m) { api->ReleaseMemoryInfo(m); }
OrtStatus* vort_create_tensor(const OrtMemoryInfo* m, void* data, size_t bytes, const int64_t* shape, size_t ndim, int elem, OrtValue** out) {
	return api->CreateTensorWithDataAsOrtValue(m, data, bytes, shape, ndim, (ONNXTensorElementDataType)elem, out);
}
void vort_release_value(OrtValue* v) { api->ReleaseValue(v); }
OrtStatus* vort_run(OrtSession* s, const char* const* in_names, const OrtValue* const* in, size_t nin,
                    const char* const* out_names, size_t nout, OrtValue** out) {
	return api->Run(s, NULL, in_names, in, nin, out_names, nout, out);
}
OrtStatus* vort_tensor_shape(const OrtValue* v, int64_t* dims, size_t* ndims) {
	OrtTensorTypeAndShapeInfo* info;
	OrtStatus* st = api->GetTensorTypeAndShape(v, &info);
	if (st) return st;
	size_t nd = 0;
	st = api->GetDimensionsCount(info, &nd);
	if (!st) {
		if (nd > *ndims) nd = *ndims;
		st = api->GetDimensions(info, dims, nd);
		*ndims = nd;
	}
	api->ReleaseTensorTypeAndShapeInfo(info);
	return st;
}
OrtStatus* vort_tensor_data(OrtValue* v, void** out) { return api->GetTensorMutableData(v, out); }

OrtStatus* vort_create_io_binding(OrtSession* s, OrtIoBinding** out) { return api->CreateIoBinding(s, out); }
void vort_release_io_binding(OrtIoBinding* b) { api->ReleaseIoBinding(b); }
OrtStatus* vort_bind_input(OrtIoBinding* b, const char* n, const OrtValue* v) { return api->BindInput(b, n, v); }
OrtStatus* vort_bind_output(OrtIoBinding* b, const char* n, const OrtValue* v) { return api->BindOutput(b, n, v); }
OrtStatus* vort_bind_output_to_device(OrtIoBinding* b, const char* n, const OrtMemoryInfo* m) { return api->BindOutputToDevice(b, n, m); }
OrtStatus* vort_run_with_binding(OrtSession* s, const OrtIoBinding* b) { return api->RunWithBinding(s, NULL, b); }
void vort_clear_bound(OrtIoBinding* b) { api->ClearBoundInputs(b); api->ClearBoundOutputs(b); }

OrtStatus* vort_register_ep_library(OrtEnv* env, const char* name, const char* path) {
	return api->RegisterExecutionProviderLibrary(env, name, path);
}
OrtStatus* vort_unregister_ep_library(OrtEnv* env, const char* name) { return api->UnregisterExecutionProviderLibrary(env, name); }
OrtStatus* vort_get_ep_devices(const OrtEnv* env, const OrtEpDevice* const** devs, size_t* n) { return api->GetEpDevices(env, devs, n); }
const char* vort_ep_device_name(const OrtEpDevice* d) { return api->EpDevice_EpName(d); }
const char* vort_ep_device_vendor(const OrtEpDevice* d) { return api->EpDevice_EpVendor(d); }
OrtStatus* vort_append_ep_v2(OrtSessionOptions* o, OrtEnv* env, const OrtEpDevice* d,
                             const char* const* keys, const char* const* values, size_t n) {
	const OrtEpDevice* devs[1] = {d};
	return api->SessionOptionsAppendExecutionProvider_V2(o, env, devs, 1, keys, values, n);
}
