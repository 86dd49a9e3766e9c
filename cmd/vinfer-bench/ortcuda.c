#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include "onnxruntime_c_api.h"
#include "ortcuda.h"

static const OrtApi *api;
static OrtEnv *env;

#define MAXB 64

struct vo_session {
	OrtSession *sess;
	OrtSessionOptions *so;
	OrtMemoryInfo *mem;
	OrtIoBinding *bind;
	OrtRunOptions *run;
	OrtValue *in[MAXB + 1], *out[MAXB + 1];
	char *in_name, *out_name;
	int64_t out_elems;
	int max_batch;
};

static int fail(OrtStatus *st, const char *what, char *err, int n) {
	snprintf(err, n, "%s: %s", what, api->GetErrorMessage(st));
	api->ReleaseStatus(st);
	return -1;
}

#define CHECK(call, what) do { OrtStatus *st_ = (call); if (st_) return fail(st_, what, err, errlen); } while (0)

int vo_init(const char *ort_lib, const char *ep_lib, char *err, int errlen) {
	if (api) return 0;
	void *h = dlopen(ort_lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) { snprintf(err, errlen, "%s", dlerror()); return -1; }
	const OrtApiBase *(*base)(void) = (const OrtApiBase *(*)(void))dlsym(h, "OrtGetApiBase");
	if (!base) { snprintf(err, errlen, "%s: no OrtGetApiBase", ort_lib); return -1; }
	api = base()->GetApi(ORT_API_VERSION);
	if (!api) { snprintf(err, errlen, "%s (%s) does not offer C API %d", ort_lib, base()->GetVersionString(), ORT_API_VERSION); return -1; }
	CHECK(api->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "vinfer-bench", &env), "CreateEnv");
	CHECK(api->RegisterExecutionProviderLibrary(env, "cuda", ep_lib), "RegisterExecutionProviderLibrary");
	return 0;
}

int vo_open(vo_session **out, const char *model, int device, uintptr_t stream, uintptr_t in_dev,
	uintptr_t out_dev, int max_batch, char *err, int errlen) {
	if (max_batch < 1 || max_batch > MAXB) { snprintf(err, errlen, "batch %d out of 1..%d", max_batch, MAXB); return -1; }
	const OrtEpDevice *const *devs;
	size_t ndev;
	CHECK(api->GetEpDevices(env, &devs, &ndev), "GetEpDevices");
	const OrtEpDevice *pick = NULL;
	int seen = 0;
	for (size_t i = 0; i < ndev; i++) {
		if (strcmp(api->EpDevice_EpName(devs[i]), "CUDAExecutionProvider") == 0) {
			if (seen++ == device) { pick = devs[i]; break; }
		}
	}
	if (!pick) { snprintf(err, errlen, "no CUDAExecutionProvider device %d among %zu EP devices", device, ndev); return -1; }
	vo_session *s = calloc(1, sizeof *s);
	s->max_batch = max_batch;
	*out = s;
	CHECK(api->CreateSessionOptions(&s->so), "CreateSessionOptions");
	CHECK(api->SetSessionGraphOptimizationLevel(s->so, ORT_ENABLE_ALL), "SetSessionGraphOptimizationLevel");
	char dev_s[16], stream_s[32];
	snprintf(dev_s, sizeof dev_s, "%d", device);
	snprintf(stream_s, sizeof stream_s, "%llu", (unsigned long long)stream);
	(void)dev_s; // the EP device picked above fixes device_id
	const char *keys[] = {"cudnn_conv_algo_search", "has_user_compute_stream", "user_compute_stream"};
	const char *algo = getenv("VINFER_CUDNN_ALGO"); // EXHAUSTIVE (default), HEURISTIC, DEFAULT
	const char *vals[] = {algo ? algo : "EXHAUSTIVE", "1", stream_s};
	CHECK(api->SessionOptionsAppendExecutionProvider_V2(s->so, env, &pick, 1, keys, vals, stream ? 3 : 1), "SessionOptionsAppendExecutionProvider_V2");
	CHECK(api->CreateSession(env, model, s->so, &s->sess), "CreateSession");
	OrtAllocator *alloc;
	CHECK(api->GetAllocatorWithDefaultOptions(&alloc), "GetAllocatorWithDefaultOptions");
	CHECK(api->SessionGetInputName(s->sess, 0, alloc, &s->in_name), "SessionGetInputName");
	CHECK(api->SessionGetOutputName(s->sess, 0, alloc, &s->out_name), "SessionGetOutputName");
	// shapes
	OrtTypeInfo *ti;
	const OrtTensorTypeAndShapeInfo *tsi;
	int64_t ishape[8], oshape[8];
	size_t ind, ond;
	CHECK(api->SessionGetInputTypeInfo(s->sess, 0, &ti), "SessionGetInputTypeInfo");
	CHECK(api->CastTypeInfoToTensorInfo(ti, &tsi), "CastTypeInfoToTensorInfo");
	CHECK(api->GetDimensionsCount(tsi, &ind), "GetDimensionsCount");
	CHECK(api->GetDimensions(tsi, ishape, ind), "GetDimensions");
	api->ReleaseTypeInfo(ti);
	CHECK(api->SessionGetOutputTypeInfo(s->sess, 0, &ti), "SessionGetOutputTypeInfo");
	CHECK(api->CastTypeInfoToTensorInfo(ti, &tsi), "CastTypeInfoToTensorInfo");
	CHECK(api->GetDimensionsCount(tsi, &ond), "GetDimensionsCount");
	CHECK(api->GetDimensions(tsi, oshape, ond), "GetDimensions");
	api->ReleaseTypeInfo(ti);
	if (ishape[0] > 0 && max_batch > ishape[0]) {
		snprintf(err, errlen, "model %s has a fixed batch of %lld; use a dynamic-batch copy (scripts/gpu/make-dynamic-batch.py)", model, (long long)ishape[0]);
		return -1;
	}
	int64_t in_elems = 1;
	for (size_t i = 1; i < ind; i++) in_elems *= ishape[i];
	s->out_elems = 1;
	for (size_t i = 1; i < ond; i++) s->out_elems *= oshape[i] > 0 ? oshape[i] : 1;
	CHECK(api->CreateMemoryInfo("Cuda", OrtDeviceAllocator, device, OrtMemTypeDefault, &s->mem), "CreateMemoryInfo(Cuda)");
	for (int n = 1; n <= max_batch; n++) {
		ishape[0] = n;
		oshape[0] = n;
		CHECK(api->CreateTensorWithDataAsOrtValue(s->mem, (void *)in_dev, (size_t)(n * in_elems * 4), ishape, ind,
			ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &s->in[n]), "CreateTensorWithDataAsOrtValue(input)");
		CHECK(api->CreateTensorWithDataAsOrtValue(s->mem, (void *)out_dev, (size_t)(n * s->out_elems * 4), oshape, ond,
			ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &s->out[n]), "CreateTensorWithDataAsOrtValue(output)");
	}
	CHECK(api->CreateIoBinding(s->sess, &s->bind), "CreateIoBinding");
	CHECK(api->CreateRunOptions(&s->run), "CreateRunOptions");
	return 0;
}

int64_t vo_out_elems(vo_session *s) { return s->out_elems; }

int vo_run(vo_session *s, int n, char *err, int errlen) {
	if (n < 1 || n > s->max_batch) { snprintf(err, errlen, "batch %d out of 1..%d", n, s->max_batch); return -1; }
	CHECK(api->BindInput(s->bind, s->in_name, s->in[n]), "BindInput");
	CHECK(api->BindOutput(s->bind, s->out_name, s->out[n]), "BindOutput");
	CHECK(api->RunWithBinding(s->sess, s->run, s->bind), "RunWithBinding");
	return 0;
}

void vo_close(vo_session *s) {
	if (!s) return;
	for (int n = 0; n <= MAXB; n++) {
		if (s->in[n]) api->ReleaseValue(s->in[n]);
		if (s->out[n]) api->ReleaseValue(s->out[n]);
	}
	if (s->bind) api->ReleaseIoBinding(s->bind);
	if (s->run) api->ReleaseRunOptions(s->run);
	if (s->mem) api->ReleaseMemoryInfo(s->mem);
	if (s->sess) api->ReleaseSession(s->sess);
	if (s->so) api->ReleaseSessionOptions(s->so);
	free(s);
}
