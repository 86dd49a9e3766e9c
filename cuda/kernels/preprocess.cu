// Fused preprocessing for vinfer's GPU path. One thread per model-input pixel reads an NV12
// picture in device memory (NVDEC's output), converts it to 8-bit BGR, letterboxes it with
// bilinear resampling, normalizes, and writes the three planes of one slot of an NCHW batch
// tensor, float32 or float16.
//
// The arithmetic is the CPU path's (preprocess/cpu.go), which is OpenCV's, step for step, so
// the float32 output is bit-identical to preprocess.CPU on the same NV12 frame:
//   - colour: BT.601 in Q20 fixed point (OpenCV's cvtColor coefficients for limited range,
//     luma below 16 treated as 16; T.871 for full range), each chroma sample shared by its 2x2
//     luma block, results rounded and saturated to 8 bits;
//   - resize: OpenCV 4.6 INTER_LINEAR (fx = (d+0.5)*src/dst - 0.5 in float64, rounded to
//     float32, weights rounded to Q11; horizontal weights edge-clamped, vertical ones not), or
//     INTER_AREA's bilinear variant (used by OpenCV when enlarging); a horizontal pass in Q11
//     integers, then OpenCV's vectorized vertical pass (vblend) rounding to 8 bits;
//   - normalize: (v*scale - mean[c]) / std[c] in float32 per output channel; padding gets the
//     Pad value normalized the same way.
// Float operations use explicit _rn intrinsics so nvcc cannot contract them into FMAs.
//
// Rebuild the committed PTX (needs the CUDA 13 toolkit; vinfer's own build needs none):
//   nvcc -ptx -arch=compute_75 -O3 -o cuda/kernels/preprocess.ptx cuda/kernels/preprocess.cu
#include <cuda_fp16.h>

struct Params {
	const unsigned char *y;   // luma plane
	const unsigned char *uv;  // interleaved Cb,Cr plane, (srcH+1)/2 rows
	int yPitch, uvPitch;      // bytes per row
	int srcW, srcH;           // picture size in pixels
	int dstW, dstH;           // canvas (model input) size
	int offX, offY, rw, rh;   // resized picture placed at (offX,offY), rw x rh pixels
	double scaleX, scaleY;    // 1/(rw/srcW), 1/(rh/srcH), as OpenCV computes them
	double invX, invY;        // rw/srcW, rh/srcH
	int area, fullRange;      // area: INTER_AREA's bilinear variant; fullRange: JPEG-range YUV
	int cy, cvr, cvg, cug, cub; // Q20 colour coefficients (cvg, cug negative)
	float scale, mean0, mean1, mean2, std0, std1, std2; // per output channel
	int bgr;                  // 1: output channel 0 is blue (BGR order)
};

#define QSHIFT 20
#define QHALF (1 << (QSHIFT - 1))
#define LBITS 11

__device__ __forceinline__ int sat8(int v) { return min(max(v, 0), 255); }

// OpenCV's bilinear tap for output index d: source index s and Q11 weights (w0, w1). clampW
// clamps the weights at the edges as OpenCV's horizontal pass does; its vertical pass clamps
// only the row indices (the caller does) and keeps the weights.
__device__ __forceinline__ void tap(int d, int src, double scale, double inv, int area, int clampW, int &s, int &w0, int &w1) {
	float f;
	if (!area) {
		f = __double2float_rn(__dadd_rn(__dmul_rn(__dadd_rn((double)d, 0.5), scale), -0.5));
		s = (int)floorf(f);
		f = __fsub_rn(f, (float)s);
	} else {
		s = (int)floor(__dmul_rn((double)d, scale));
		f = __double2float_rn(__dadd_rn((double)(d + 1), -__dmul_rn((double)(s + 1), inv)));
		f = f <= 0.f ? 0.f : __fsub_rn(f, floorf(f));
	}
	if (clampW && s < 0) { s = 0; f = 0.f; }
	if (clampW && s >= src - 1) { s = src - 1; f = 0.f; }
	w0 = (int)rintf(__fmul_rn(__fsub_rn(1.f, f), (float)(1 << LBITS)));
	w1 = (int)rintf(__fmul_rn(f, (float)(1 << LBITS)));
}

// vblend is OpenCV 4.6's vectorized vertical pass for 8-bit bilinear (VResizeLinearVec_32s8u):
// each row's Q11 sum is shifted down 4 bits, multiplied by its Q11 weight keeping the high 16
// bits, and the sum rounded to 8 bits.
__device__ __forceinline__ int vblend(int s0, int s1, int w0, int w1) {
	return min(((((s0 >> 4) * w0) >> 16) + (((s1 >> 4) * w1) >> 16) + 2) >> 2, 255);
}

// bgrAt converts source pixel (x,y) to 8-bit B,G,R.
__device__ __forceinline__ void bgrAt(const Params &p, int x, int y, int &b, int &g, int &r) {
	int Y = p.y[(size_t)y * p.yPitch + x];
	const unsigned char *c = p.uv + (size_t)(y >> 1) * p.uvPitch + 2 * (x >> 1);
	int u = (int)c[0] - 128, v = (int)c[1] - 128;
	int l = p.fullRange ? Y * p.cy : max(0, Y - 16) * p.cy;
	b = sat8((l + QHALF + p.cub * u) >> QSHIFT);
	g = sat8((l + p.cug * u + QHALF + p.cvg * v) >> QSHIFT);
	r = sat8((l + QHALF + p.cvr * v) >> QSHIFT);
}

__device__ __forceinline__ float norm(int v, float scale, float mean, float std) {
	return __fdiv_rn(__fsub_rn(__fmul_rn((float)v, scale), mean), std);
}

template <typename T> __device__ __forceinline__ T conv(float v);
template <> __device__ __forceinline__ float conv<float>(float v) { return v; }
template <> __device__ __forceinline__ __half conv<__half>(float v) { return __float2half_rn(v); }

template <typename T> __device__ __forceinline__ void run(const Params &p, T *dst, int pad) {
	int dx = blockIdx.x * blockDim.x + threadIdx.x;
	int dy = blockIdx.y * blockDim.y + threadIdx.y;
	if (dx >= p.dstW || dy >= p.dstH) return;
	int c0, c1, c2; // B, G, R
	int px = dx - p.offX, py = dy - p.offY;
	if (px >= 0 && px < p.rw && py >= 0 && py < p.rh) {
		int x0, wx0, wx1, y0, wy0, wy1;
		tap(px, p.srcW, p.scaleX, p.invX, p.area, 1, x0, wx0, wx1);
		tap(py, p.srcH, p.scaleY, p.invY, p.area, 0, y0, wy0, wy1);
		int x1 = min(x0 + 1, p.srcW - 1);
		int y1 = min(max(y0 + 1, 0), p.srcH - 1);
		y0 = min(max(y0, 0), p.srcH - 1);
		int b00, g00, r00, b01, g01, r01, b10, g10, r10, b11, g11, r11;
		bgrAt(p, x0, y0, b00, g00, r00);
		bgrAt(p, x1, y0, b01, g01, r01);
		bgrAt(p, x0, y1, b10, g10, r10);
		bgrAt(p, x1, y1, b11, g11, r11);
		// Horizontal pass per row (Q11), then OpenCV's vertical pass.
		c0 = vblend(wx0 * b00 + wx1 * b01, wx0 * b10 + wx1 * b11, wy0, wy1);
		c1 = vblend(wx0 * g00 + wx1 * g01, wx0 * g10 + wx1 * g11, wy0, wy1);
		c2 = vblend(wx0 * r00 + wx1 * r01, wx0 * r10 + wx1 * r11, wy0, wy1);
	} else {
		c0 = c1 = c2 = pad;
	}
	if (!p.bgr) { int t = c0; c0 = c2; c2 = t; }
	size_t plane = (size_t)p.dstW * p.dstH, i = (size_t)dy * p.dstW + dx;
	dst[i] = conv<T>(norm(c0, p.scale, p.mean0, p.std0));
	dst[plane + i] = conv<T>(norm(c1, p.scale, p.mean1, p.std1));
	dst[2 * plane + i] = conv<T>(norm(c2, p.scale, p.mean2, p.std2));
}

// dst points at slot b of the batch tensor (base + b*3*dstH*dstW elements); pad is the 0-255
// letterbox fill.
extern "C" __global__ void nv12_nchw_f32(Params p, float *dst, int pad) { run<float>(p, dst, pad); }
extern "C" __global__ void nv12_nchw_f16(Params p, __half *dst, int pad) { run<__half>(p, dst, pad); }
