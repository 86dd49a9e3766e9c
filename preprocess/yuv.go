package preprocess

// YUV → BGR conversion of 8-bit BT.601 YUV 4:2:0, in Q20 fixed point.
//
// Limited range (16–235 luma, 16–240 chroma) uses exactly OpenCV's cvtColor(COLOR_YUV2BGR_I420)
// arithmetic (imgproc color_yuv): the BT.601 coefficients rounded to three decimals
// (R = 1.164(Y−16) + 1.596(V−128), G = 1.164(Y−16) − 0.813(V−128) − 0.391(U−128),
// B = 1.164(Y−16) + 2.018(U−128)), luma below 16 treated as 16, results rounded and saturated,
// and each chroma sample shared by its 2×2 luma block (nearest-neighbour chroma upsampling).
// This makes a vinfer tensor from an I420 frame match OpenCV's convert-then-resize pipeline.
//
// Full range (JPEG, ITU-T T.871 / FFmpeg yuvj420p) uses R = Y + 1.402(V−128),
// G = Y − 0.344136(U−128) − 0.714136(V−128), B = Y + 1.772(U−128).

const (
	yuvShift = 20
	yuvHalf  = 1 << (yuvShift - 1)

	// clipBias offsets a converted value (range about −260…540) into the clip table.
	clipBias = 1024
	clipMask = 2047
)

// yuvTables holds the per-sample terms of the conversion, already multiplied out.
type yuvTables struct {
	y      [256]int32
	rv     [256]int32
	gu, gv [256]int32
	bu     [256]int32
}

// clip saturates (value >> yuvShift) + clipBias to 0…255.
var clip = func() (t [clipMask + 1]uint8) {
	for i := range t {
		t[i] = uint8(min(max(i-clipBias, 0), 255))
	}
	return t
}()

func newYUVTables(fullRange bool) *yuvTables {
	var t yuvTables
	// Q20 coefficients: limited range as OpenCV (ITUR_BT_601_C*), full range from T.871.
	cy, cvr, cvg, cug, cub := 1220542, 1673527, -852492, -409993, 2116026
	if fullRange {
		cy = 1 << yuvShift
		cvr, cvg, cug, cub = q20(1.402), q20(-0.714136), q20(-0.344136), q20(1.772)
	}
	for i := range 256 {
		c := i - 128
		if fullRange {
			t.y[i] = int32(i * cy)
		} else {
			t.y[i] = int32(max(0, i-16) * cy)
		}
		t.rv[i] = int32(yuvHalf + cvr*c)
		t.gu[i] = int32(cug * c)
		t.gv[i] = int32(yuvHalf + cvg*c)
		t.bu[i] = int32(yuvHalf + cub*c)
	}
	return &t
}

func q20(v float64) int {
	if v < 0 {
		return -int(-v*(1<<yuvShift) + 0.5)
	}
	return int(v*(1<<yuvShift) + 0.5)
}

// pixel converts one sample to B, G, R.
func (t *yuvTables) pixel(dst []byte, y, u, v uint8) {
	dst = dst[:3:3]
	l := t.y[y]
	dst[0] = clip[((l+t.bu[u])>>yuvShift+clipBias)&clipMask]
	dst[1] = clip[((l+t.gu[u]+t.gv[v])>>yuvShift+clipBias)&clipMask]
	dst[2] = clip[((l+t.rv[v])>>yuvShift+clipBias)&clipMask]
}

// row converts a whole row of w pixels into packed BGR (3w bytes of dst). us and vs hold the
// row's chroma with cs bytes between consecutive samples (1 for I420 planes, 2 for NV12's
// interleaved UV, with vs = uv[1:]).
func (t *yuvTables) row(dst, ys, us, vs []byte, cs, w int) {
	dst = dst[:3*w]
	ys = ys[:w]
	x, ci := 0, 0
	for ; x+1 < w; x, ci = x+2, ci+cs {
		u, v := us[ci], vs[ci]
		bu, guv, rv := t.bu[u], t.gu[u]+t.gv[v], t.rv[v]
		l0, l1 := t.y[ys[x]], t.y[ys[x+1]]
		d := dst[3*x : 3*x+6 : 3*x+6]
		d[0] = clip[((l0+bu)>>yuvShift+clipBias)&clipMask]
		d[1] = clip[((l0+guv)>>yuvShift+clipBias)&clipMask]
		d[2] = clip[((l0+rv)>>yuvShift+clipBias)&clipMask]
		d[3] = clip[((l1+bu)>>yuvShift+clipBias)&clipMask]
		d[4] = clip[((l1+guv)>>yuvShift+clipBias)&clipMask]
		d[5] = clip[((l1+rv)>>yuvShift+clipBias)&clipMask]
	}
	if x < w { // odd width: the last chroma sample covers one luma column
		t.pixel(dst[3*x:], ys[x], us[ci], vs[ci])
	}
}

// cols converts only the listed columns (ascending pixel indices) of a row into packed BGR at
// their own positions of dst; the other bytes of dst are left as they are.
func (t *yuvTables) cols(dst, ys, us, vs []byte, cs int, cols []int32) {
	for _, x := range cols {
		ci := int(x>>1) * cs
		t.pixel(dst[3*x:], ys[x], us[ci], vs[ci])
	}
}
