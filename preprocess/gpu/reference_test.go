package gpu

import (
	"math"

	"github.com/vinfer/vinfer/preprocess"
)

// reference is a line-by-line Go port of the kernel (cuda/kernels/preprocess.cu): run on the
// host it lets CI check the kernel's arithmetic against preprocess.CPU without a GPU, and on the
// device machine it is the expected output of the kernel itself.
func reference(p *params, y, uv []byte, yPitch, uvPitch int, fullRange bool, dst []float32) {
	q := limitedQ20
	if fullRange {
		q = fullQ20
	}
	cy, cvr, cvg, cug, cub := q[0], q[1], q[2], q[3], q[4]
	bgrAt := func(x, yy int) (b, g, r int32) {
		Y := int32(y[yy*yPitch+x])
		c := uv[(yy>>1)*uvPitch+2*(x>>1):]
		u, v := int32(c[0])-128, int32(c[1])-128
		var l int32
		if fullRange {
			l = Y * cy
		} else {
			l = max(0, Y-16) * cy
		}
		const half = 1 << 19
		return sat8((l + half + cub*u) >> 20), sat8((l + cug*u + half + cvg*v) >> 20), sat8((l + half + cvr*v) >> 20)
	}
	W, H := int(p.dstW), int(p.dstH)
	plane := W * H
	for dy := range H {
		for dx := range W {
			var c [3]int32
			px, py := dx-int(p.offX), dy-int(p.offY)
			if px >= 0 && px < int(p.rw) && py >= 0 && py < int(p.rh) {
				x0, wx0, wx1 := tap(px, int(p.srcW), p.scaleX, p.invX, p.area, true)
				y0, wy0, wy1 := tap(py, int(p.srcH), p.scaleY, p.invY, p.area, false)
				x1 := min(x0+1, int(p.srcW)-1)
				y1 := min(max(y0+1, 0), int(p.srcH)-1)
				y0 = min(max(y0, 0), int(p.srcH)-1)
				b00, g00, r00 := bgrAt(x0, y0)
				b01, g01, r01 := bgrAt(x1, y0)
				b10, g10, r10 := bgrAt(x0, y1)
				b11, g11, r11 := bgrAt(x1, y1)
				c[0] = vblend(wx0*b00+wx1*b01, wx0*b10+wx1*b11, wy0, wy1)
				c[1] = vblend(wx0*g00+wx1*g01, wx0*g10+wx1*g11, wy0, wy1)
				c[2] = vblend(wx0*r00+wx1*r01, wx0*r10+wx1*r11, wy0, wy1)
			} else {
				c = [3]int32{p.pad, p.pad, p.pad}
			}
			if !p.bgr {
				c[0], c[2] = c[2], c[0]
			}
			for ch := range 3 {
				dst[ch*plane+dy*W+dx] = (float32(c[ch])*p.scale - p.mean[ch]) / p.std[ch]
			}
		}
	}
}

func sat8(v int32) int32 { return min(max(v, 0), 255) }

// vblend mirrors the kernel's vblend (OpenCV 4.6's vectorized vertical bilinear pass).
func vblend(s0, s1, w0, w1 int32) int32 {
	return min(((((s0>>4)*w0)>>16)+(((s1>>4)*w1)>>16)+2)>>2, 255)
}

// tap mirrors the kernel's tap(): OpenCV's bilinear source index and Q11 weights.
func tap(d, src int, scale, inv float64, area, clampW bool) (s int, w0, w1 int32) {
	var f float32
	if !area {
		f = float32(float64((float64(d)+0.5)*scale) - 0.5)
		s = int(math.Floor(float64(f)))
		f -= float32(s)
	} else {
		s = int(math.Floor(float64(d) * scale))
		f = float32(float64(d+1) - float64(float64(s+1)*inv))
		if f <= 0 {
			f = 0
		} else {
			f -= float32(math.Floor(float64(f)))
		}
	}
	if clampW && s < 0 {
		s, f = 0, 0
	}
	if clampW && s >= src-1 {
		s, f = src-1, 0
	}
	return s, int32(math.RoundToEven(float64((1 - f) * (1 << 11)))), int32(math.RoundToEven(float64(f * (1 << 11))))
}

// Specs exercised by the tests: the shipped models' and variants of every option.
var testSpecs = map[string]preprocess.Spec{
	"yolox416": {Width: 416, Height: 416, Color: preprocess.BGR, Resize: preprocess.Letterbox, Align: preprocess.TopLeft, Pad: 114, Scale: 1, Std: [3]float32{1, 1, 1}},
	"yolov8-640-center-rgb": {Width: 640, Height: 640, Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center, Pad: 114,
		Scale: 1.0 / 255, Std: [3]float32{1, 1, 1}},
	"ultraface-stretch": {Width: 320, Height: 240, Color: preprocess.RGB, Resize: preprocess.Stretch, Scale: 1,
		Mean: [3]float32{127, 127, 127}, Std: [3]float32{128, 128, 128}},
	"imagenet-area-up": {Width: 1024, Height: 1024, Color: preprocess.RGB, Resize: preprocess.Letterbox, Align: preprocess.Center, Interp: preprocess.Area,
		Scale: 1.0 / 255, Mean: [3]float32{0.485, 0.456, 0.406}, Std: [3]float32{0.229, 0.224, 0.225}},
}
