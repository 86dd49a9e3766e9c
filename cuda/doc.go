// Package cuda is vinfer's binding to the CUDA driver API, loaded at run time from libcuda.so.1
// (dlopen), so vinfer builds and its CPU path runs on machines without the CUDA toolkit or driver.
//
// The rules it enforces are the ones a video pipeline needs to keep the GPU busy:
//
//   - One context per device: Open retains the device's primary context
//     (cuDevicePrimaryCtxRetain) once for the whole process and hands the same *Device to every
//     caller; FFmpeg (hw device context with AV_CUDA_USE_PRIMARY_CONTEXT) and ONNX Runtime use
//     that same context. No context is ever created on the frame path.
//   - Workers bind once: RunLocked locks a goroutine to its OS thread and makes the context
//     current there once; Launch only checks (and counts, in Stats.Rebinds) a context switch.
//   - Memory is allocated up front: a stream-ordered pool (cuMemPoolCreate with a release
//     threshold, so freed blocks stay cached) or fixed Buffers, and pinned HostBuffers for what
//     must cross PCIe. Every host↔device copy goes through this package and is counted in Stats.
//   - Kernels come from PTX embedded in the binary, loaded with cuModuleLoadData (JIT-compiled by
//     the driver for the device at hand).
//
// Errors from the driver are *Error values carrying the CUresult code and its name.
// ErrNoDriver is returned (wrapped) when libcuda.so.1 cannot be loaded and ErrNoDevice when it
// loads but reports no device: callers fall back to the CPU path on either.
package cuda
