// Package preprocess turns decoded frames into model input tensors: color conversion, resize
// (letterbox or stretch), channel order and normalization into one [3,H,W] float32 NCHW slot.
//
// A Spec describes a model's preprocessing; Spec.Place gives where a picture lands (YOLOX's
// letterbox geometry, exactly) and Placement.Transform the mapping of detections back to
// source pixels. CPU runs the whole thing on host frames (I420, NV12, BGR24, RGB24) in one
// fused pass; the gpu subpackage runs it on device frames.
//
// # Fidelity to OpenCV
//
// The reference models were validated with OpenCV 4.6 (cv2.cvtColor, cv2.resize), and CPU
// reproduces those calls' arithmetic rather than an idealised resampler, so tensors match the
// references bit for bit where OpenCV is deterministic:
//
//   - YUV 4:2:0 → BGR: cvtColor(COLOR_YUV2BGR_I420) in Q20 fixed point, nearest chroma (see
//     yuv.go); full-range frames use the T.871 coefficients. Colors are converted before
//     resampling, as cvtColor-then-resize does.
//   - Bilinear (INTER_LINEAR): OpenCV's coefficients (float32 positions, Q11 weights, clamped
//     horizontally, unclamped vertically on clamped rows), an exact horizontal pass, and the
//     vertical rounding of OpenCV's vectorised path: ((h0>>4)·w0>>16 + (h1>>4)·w1>>16 + 2)>>2.
//     Bit-exact with OpenCV 4.6 on the test pictures and on full video frames.
//   - Area (INTER_AREA) shrinking: OpenCV's box weights (computeResizeAreaTab) in Q24 fixed
//     point, rounded once; OpenCV accumulates in float32 and rounds half to even, so values
//     whose exact result is a tie (common when the size ratio is a small fraction) may land
//     one step apart: about 1% of values on the test pictures, 0.4% on a 768×432 frame to
//     352×352, 9% for integer factors. Enlarging with Area uses OpenCV's bilinear variant,
//     bit-exact like bilinear.
//
// Normalization (v·Scale − Mean[c]) / Std[c] is applied to the 8-bit result through a table,
// so it is exact in float32.
//
// # Cost
//
// Costs per conversion (go test -bench Run ./preprocess) are in docs/benchmarks.md; none
// allocates per frame.
package preprocess
