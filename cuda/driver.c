#include <dlfcn.h>
#include <stdio.h>
#include "driver.h"

#define NOT_INIT 3

#define ENTRY(name, sym, required, params) \
	typedef CUresult (*pfn_##name) params; \
	static pfn_##name p_##name;
#include "entries.h"
#undef ENTRY

const char *vf_load(const char *lib) {
	static char msg[256];
	void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(msg, sizeof msg, "%s", dlerror());
		return msg;
	}
#define ENTRY(name, sym, required, params) \
	p_##name = (pfn_##name)dlsym(h, sym); \
	if (!p_##name && required) { \
		snprintf(msg, sizeof msg, "%s: symbol %s not found", lib, sym); \
		return msg; \
	}
#include "entries.h"
#undef ENTRY
	return NULL;
}

#define CALL(name, ...) return p_##name ? p_##name(__VA_ARGS__) : NOT_INIT

CUresult vf_cuInit(unsigned f) { CALL(cuInit, f); }
CUresult vf_cuDriverGetVersion(int *v) { CALL(cuDriverGetVersion, v); }
CUresult vf_cuGetErrorName(CUresult e, const char **s) { CALL(cuGetErrorName, e, s); }
CUresult vf_cuGetErrorString(CUresult e, const char **s) { CALL(cuGetErrorString, e, s); }
CUresult vf_cuDeviceGetCount(int *n) { CALL(cuDeviceGetCount, n); }
CUresult vf_cuDeviceGet(CUdevice *d, int o) { CALL(cuDeviceGet, d, o); }
CUresult vf_cuDeviceGetName(char *n, int l, CUdevice d) { CALL(cuDeviceGetName, n, l, d); }
CUresult vf_cuDeviceGetAttribute(int *v, int a, CUdevice d) { CALL(cuDeviceGetAttribute, v, a, d); }
CUresult vf_cuDeviceTotalMem(size_t *b, CUdevice d) { CALL(cuDeviceTotalMem, b, d); }
CUresult vf_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { CALL(cuDevicePrimaryCtxRetain, c, d); }
CUresult vf_cuDevicePrimaryCtxRelease(CUdevice d) { CALL(cuDevicePrimaryCtxRelease, d); }
CUresult vf_cuCtxCreate(CUcontext *c, unsigned f, CUdevice d) { CALL(cuCtxCreate, c, f, d); }
CUresult vf_cuCtxDestroy(CUcontext c) { CALL(cuCtxDestroy, c); }
CUresult vf_cuCtxSetCurrent(CUcontext c) { CALL(cuCtxSetCurrent, c); }
CUresult vf_cuCtxGetCurrent(CUcontext *c) { CALL(cuCtxGetCurrent, c); }
CUresult vf_cuCtxSynchronize(void) { return p_cuCtxSynchronize ? p_cuCtxSynchronize() : NOT_INIT; }
CUresult vf_cuMemGetInfo(size_t *f, size_t *t) { CALL(cuMemGetInfo, f, t); }
CUresult vf_cuThreadExchangeStreamCaptureMode(int *m) { CALL(cuThreadExchangeStreamCaptureMode, m); }
CUresult vf_cuStreamCreate(CUstream *s, unsigned f) { CALL(cuStreamCreate, s, f); }
CUresult vf_cuStreamDestroy(CUstream s) { CALL(cuStreamDestroy, s); }
CUresult vf_cuStreamSynchronize(CUstream s) { CALL(cuStreamSynchronize, s); }
CUresult vf_cuStreamWaitEvent(CUstream s, CUevent e, unsigned f) { CALL(cuStreamWaitEvent, s, e, f); }
CUresult vf_cuEventCreate(CUevent *e, unsigned f) { CALL(cuEventCreate, e, f); }
CUresult vf_cuEventDestroy(CUevent e) { CALL(cuEventDestroy, e); }
CUresult vf_cuEventRecord(CUevent e, CUstream s) { CALL(cuEventRecord, e, s); }
CUresult vf_cuEventSynchronize(CUevent e) { CALL(cuEventSynchronize, e); }
CUresult vf_cuEventQuery(CUevent e) { CALL(cuEventQuery, e); }
CUresult vf_cuEventElapsedTime(float *ms, CUevent a, CUevent b) { CALL(cuEventElapsedTime, ms, a, b); }
CUresult vf_cuMemAlloc(CUdeviceptr *p, size_t n) { CALL(cuMemAlloc, p, n); }
CUresult vf_cuMemFree(CUdeviceptr p) { CALL(cuMemFree, p); }
CUresult vf_cuMemHostAlloc(void **p, size_t n, unsigned f) { CALL(cuMemHostAlloc, p, n, f); }
CUresult vf_cuMemFreeHost(void *p) { CALL(cuMemFreeHost, p); }
CUresult vf_cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st) { CALL(cuMemcpyHtoDAsync, d, s, n, st); }
CUresult vf_cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st) { CALL(cuMemcpyDtoHAsync, d, s, n, st); }
CUresult vf_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) { CALL(cuMemcpyDtoDAsync, d, s, n, st); }
CUresult vf_cuMemcpy2DAsync(const vf_CUDA_MEMCPY2D *c, CUstream s) { CALL(cuMemcpy2DAsync, c, s); }
CUresult vf_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) { CALL(cuMemsetD8Async, d, v, n, s); }
CUresult vf_cuMemsetD32Async(CUdeviceptr d, unsigned v, size_t n, CUstream s) { CALL(cuMemsetD32Async, d, v, n, s); }
CUresult vf_cuMemPoolCreate(CUmemoryPool *p, const vf_CUmemPoolProps *pr) { CALL(cuMemPoolCreate, p, pr); }
CUresult vf_cuMemPoolDestroy(CUmemoryPool p) { CALL(cuMemPoolDestroy, p); }
CUresult vf_cuMemPoolSetAttribute(CUmemoryPool p, int a, void *v) { CALL(cuMemPoolSetAttribute, p, a, v); }
CUresult vf_cuMemPoolGetAttribute(CUmemoryPool p, int a, void *v) { CALL(cuMemPoolGetAttribute, p, a, v); }
CUresult vf_cuMemPoolTrimTo(CUmemoryPool p, size_t k) { CALL(cuMemPoolTrimTo, p, k); }
CUresult vf_cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { CALL(cuMemAllocFromPoolAsync, p, n, pool, s); }
CUresult vf_cuMemFreeAsync(CUdeviceptr p, CUstream s) { CALL(cuMemFreeAsync, p, s); }
CUresult vf_cuModuleLoadData(CUmodule *m, const void *img) { CALL(cuModuleLoadData, m, img); }
CUresult vf_cuModuleUnload(CUmodule m) { CALL(cuModuleUnload, m); }
CUresult vf_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *n) { CALL(cuModuleGetFunction, f, m, n); }

CUresult vf_launch(CUcontext ctx, unsigned long long *rebinds, CUfunction f,
	unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
	unsigned shmem, CUstream s, unsigned char *buf, size_t size) {
	CUcontext cur = NULL;
	CUresult r = p_cuCtxGetCurrent(&cur);
	if (r) return r;
	if (cur != ctx) {
		if ((r = p_cuCtxSetCurrent(ctx))) return r;
		__atomic_add_fetch(rebinds, 1, __ATOMIC_RELAXED);
	}
	void *extra[] = {(void *)1, buf, (void *)2, &size, (void *)0}; // BUFFER_POINTER, BUFFER_SIZE, END
	return p_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shmem, s, NULL, extra);
}
