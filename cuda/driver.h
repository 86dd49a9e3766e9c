// Minimal declarations of the CUDA driver API (cuda.h, CUDA 12/13 ABI) for the entry points vinfer
// uses, so that vinfer builds without the CUDA toolkit. libcuda.so.1 is loaded at run time.
#ifndef VINFER_CUDA_DRIVER_H
#define VINFER_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUmemPoolHandle_st *CUmemoryPool;

// CUmemPoolProps (88 bytes in CUDA 11-13).
typedef struct {
	int allocType;    // CU_MEM_ALLOCATION_TYPE_PINNED = 1
	int handleTypes;  // CU_MEM_HANDLE_TYPE_NONE = 0
	int locationType; // CU_MEM_LOCATION_TYPE_DEVICE = 1
	int locationId;   // device ordinal
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned short usage;
	unsigned char reserved[54];
} vf_CUmemPoolProps;

// CUDA_MEMCPY2D.
typedef struct {
	size_t srcXInBytes, srcY;
	int srcMemoryType;
	const void *srcHost;
	CUdeviceptr srcDevice;
	void *srcArray;
	size_t srcPitch;
	size_t dstXInBytes, dstY;
	int dstMemoryType;
	void *dstHost;
	CUdeviceptr dstDevice;
	void *dstArray;
	size_t dstPitch;
	size_t WidthInBytes, Height;
} vf_CUDA_MEMCPY2D;

// Loads libcuda (name) and resolves every entry point; returns NULL on success or a static
// message naming what failed.
const char *vf_load(const char *name);

// Entry points (each forwards to the resolved symbol; CUDA_ERROR_NOT_INITIALIZED = 3 when an
// optional symbol is missing).
CUresult vf_cuInit(unsigned flags);
CUresult vf_cuDriverGetVersion(int *v);
CUresult vf_cuGetErrorName(CUresult e, const char **s);
CUresult vf_cuGetErrorString(CUresult e, const char **s);
CUresult vf_cuDeviceGetCount(int *n);
CUresult vf_cuDeviceGet(CUdevice *d, int ordinal);
CUresult vf_cuDeviceGetName(char *name, int len, CUdevice d);
CUresult vf_cuDeviceGetAttribute(int *v, int attr, CUdevice d);
CUresult vf_cuDeviceTotalMem(size_t *b, CUdevice d);
CUresult vf_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d);
CUresult vf_cuDevicePrimaryCtxRelease(CUdevice d);
CUresult vf_cuCtxCreate(CUcontext *c, unsigned flags, CUdevice d);
CUresult vf_cuCtxDestroy(CUcontext c);
CUresult vf_cuCtxSetCurrent(CUcontext c);
CUresult vf_cuCtxGetCurrent(CUcontext *c);
CUresult vf_cuCtxSynchronize(void);
CUresult vf_cuMemGetInfo(size_t *free, size_t *total);
CUresult vf_cuThreadExchangeStreamCaptureMode(int *mode);
CUresult vf_cuStreamCreate(CUstream *s, unsigned flags);
CUresult vf_cuStreamDestroy(CUstream s);
CUresult vf_cuStreamSynchronize(CUstream s);
CUresult vf_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags);
CUresult vf_cuEventCreate(CUevent *e, unsigned flags);
CUresult vf_cuEventDestroy(CUevent e);
CUresult vf_cuEventRecord(CUevent e, CUstream s);
CUresult vf_cuEventSynchronize(CUevent e);
CUresult vf_cuEventQuery(CUevent e);
CUresult vf_cuEventElapsedTime(float *ms, CUevent a, CUevent b);
CUresult vf_cuMemAlloc(CUdeviceptr *p, size_t n);
CUresult vf_cuMemFree(CUdeviceptr p);
CUresult vf_cuMemHostAlloc(void **p, size_t n, unsigned flags);
CUresult vf_cuMemFreeHost(void *p);
CUresult vf_cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n, CUstream s);
CUresult vf_cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n, CUstream s);
CUresult vf_cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s);
CUresult vf_cuMemcpy2DAsync(const vf_CUDA_MEMCPY2D *c, CUstream s);
CUresult vf_cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s);
CUresult vf_cuMemsetD32Async(CUdeviceptr dst, unsigned v, size_t n, CUstream s);
CUresult vf_cuMemPoolCreate(CUmemoryPool *p, const vf_CUmemPoolProps *props);
CUresult vf_cuMemPoolDestroy(CUmemoryPool p);
CUresult vf_cuMemPoolSetAttribute(CUmemoryPool p, int attr, void *v);
CUresult vf_cuMemPoolGetAttribute(CUmemoryPool p, int attr, void *v);
CUresult vf_cuMemPoolTrimTo(CUmemoryPool p, size_t keep);
CUresult vf_cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s);
CUresult vf_cuMemFreeAsync(CUdeviceptr p, CUstream s);
CUresult vf_cuModuleLoadData(CUmodule *m, const void *image);
CUresult vf_cuModuleUnload(CUmodule m);
CUresult vf_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name);

// vf_launch binds ctx to the calling thread when another context is current (counting the
// switch in *rebinds), then launches f with its parameters packed in buf (CU_LAUNCH_PARAM_BUFFER_POINTER).
CUresult vf_launch(CUcontext ctx, unsigned long long *rebinds, CUfunction f,
	unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
	unsigned shmem, CUstream s, unsigned char *buf, size_t size);

#endif
