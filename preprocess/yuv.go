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

	// clipBias offsets converted values (about −260…540) to be non-negative, so that
	// uint32(value)>>yuvShift indexes the clip table without a bounds check.
	clipBias = 1024
)

// yuvTables holds the per-sample terms of the conversion, already multiplied out; the chroma
// terms include the rounding half and clipBias.
type yuvTables struct {
	y      [256]uint32
	rv     [256]uint32
	gu, gv [256]uint32
	bu     [256]uint32
}

// clip saturates (value >> yuvShift) − clipBias to 0…255.
var clip = func() (t [1 << (32 - yuvShift)]uint8) {
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
	const bias = clipBias << yuvShift
	for i := range 256 {
		c := i - 128
		if fullRange {
			t.y[i] = uint32(i * cy)
		} else {
			t.y[i] = uint32(max(0, i-16) * cy)
		}
		t.rv[i] = uint32(bias + yuvHalf + cvr*c)
		t.gu[i] = uint32(cug * c)
		t.gv[i] = uint32(bias + yuvHalf + cvg*c)
		t.bu[i] = uint32(bias + yuvHalf + cub*c)
	}
	return &t
}

func q20(v float64) int {
	if v < 0 {
		return -int(-v*(1<<yuvShift) + 0.5)
	}
	return int(v*(1<<yuvShift) + 0.5)
}

// pixel converts one sample to a packed B, G, R pixel.
func (t *yuvTables) pixel(y, u, v uint8) uint64 {
	l := t.y[y]
	return uint64(clip[(l+t.bu[u])>>yuvShift]) |
		uint64(clip[(l+t.gu[u]+t.gv[v])>>yuvShift])<<laneBits |
		uint64(clip[(l+t.rv[v])>>yuvShift])<<(2*laneBits)
}

// span converts pixels [x0, x1) of a row into packed B, G, R at the same positions of dst. ys
// is the luma row; us and vs hold the row's chroma with cs bytes between consecutive samples
// (1 for I420 planes, 2 for NV12's interleaved UV, with vs = uv[1:]).
func (t *yuvTables) span(dst []uint64, ys, us, vs []byte, cs, x0, x1 int) {
	dst, ys = dst[:x1], ys[:x1]
	x := x0
	if x&1 == 1 { // odd start: its chroma sample's other column is not wanted
		dst[x] = t.pixel(ys[x], us[(x>>1)*cs], vs[(x>>1)*cs])
		x++
	}
	for ci := (x >> 1) * cs; x+1 < x1; x, ci = x+2, ci+cs {
		u, v := us[ci], vs[ci]
		bu, guv, rv := t.bu[u], t.gu[u]+t.gv[v], t.rv[v]
		l0, l1 := t.y[ys[x]], t.y[ys[x+1]]
		d := dst[x : x+2 : x+2]
		d[0] = uint64(clip[(l0+bu)>>yuvShift]) |
			uint64(clip[(l0+guv)>>yuvShift])<<laneBits |
			uint64(clip[(l0+rv)>>yuvShift])<<(2*laneBits)
		d[1] = uint64(clip[(l1+bu)>>yuvShift]) |
			uint64(clip[(l1+guv)>>yuvShift])<<laneBits |
			uint64(clip[(l1+rv)>>yuvShift])<<(2*laneBits)
	}
	if x < x1 { // odd end (or odd width)
		dst[x] = t.pixel(ys[x], us[(x>>1)*cs], vs[(x>>1)*cs])
	}
}
