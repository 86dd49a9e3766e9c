package imageio

import "image"

// JFIF YCbCr → RGB (ITU-T T.871 §7) in libjpeg's 16-bit fixed point (jdcolor.c):
// R = Y + 1.402·Cr', G = Y − 0.34414·Cb' − 0.71414·Cr', B = Y + 1.772·Cb', with Cb' = Cb − 128,
// Cr' = Cr − 128, each chroma term rounded as libjpeg rounds it.
const (
	jScale = 16
	jHalf  = 1 << (jScale - 1)
)

type jpegTables struct {
	crR, cbB [256]int32 // already shifted down
	crG, cbG [256]int32 // summed, then shifted
}

var jt = func() *jpegTables {
	fix := func(v float64) int32 { return int32(v*(1<<jScale) + 0.5) }
	var t jpegTables
	for i := range 256 {
		x := int32(i - 128)
		t.crR[i] = (fix(1.40200)*x + jHalf) >> jScale
		t.cbB[i] = (fix(1.77200)*x + jHalf) >> jScale
		t.crG[i] = -fix(0.71414) * x
		t.cbG[i] = -fix(0.34414)*x + jHalf
	}
	return &t
}()

func sat(v int32) uint8 { return uint8(min(max(v, 0), 255)) }

// ycbcrToBGR converts m into packed BGR. 4:2:0, 4:2:2 and 4:4:0 chroma are upsampled with
// libjpeg-turbo's fancy upsampling (a triangle filter: each output sample is ¾ of the nearer
// chroma sample and ¼ of the next one, per subsampled axis, with libjpeg's rounding biases);
// 4:4:4 needs none; 4:1:1 and 4:1:0 fall back to nearest chroma.
func ycbcrToBGR(dst []byte, m *image.YCbCr) {
	b := m.Rect
	w, h := b.Dx(), b.Dy()
	var up func(u, v []byte, y int)
	cw := w
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
		up = func(u, v []byte, y int) {
			o := m.COffset(b.Min.X, b.Min.Y+y)
			copy(u, m.Cb[o:o+w])
			copy(v, m.Cr[o:o+w])
		}
	case image.YCbCrSubsampleRatio422:
		cw = (w + 1) / 2
		up = func(u, v []byte, y int) {
			o := m.COffset(b.Min.X, b.Min.Y+y)
			h2v1(u, m.Cb[o:o+cw])
			h2v1(v, m.Cr[o:o+cw])
		}
	case image.YCbCrSubsampleRatio420:
		cw = (w + 1) / 2
		ch := (h + 1) / 2
		up = func(u, v []byte, y int) {
			// Output row y is nearest to chroma row y/2; the farther one is the row above for
			// even y, below for odd y, replicated at the picture's edges.
			near := y / 2
			far := min(max(near-1+2*(y&1), 0), ch-1)
			on := m.COffset(b.Min.X, b.Min.Y+2*near)
			of := m.COffset(b.Min.X, b.Min.Y+2*far)
			h2v2(u, m.Cb[on:on+cw], m.Cb[of:of+cw])
			h2v2(v, m.Cr[on:on+cw], m.Cr[of:of+cw])
		}
	case image.YCbCrSubsampleRatio440:
		ch := (h + 1) / 2
		up = func(u, v []byte, y int) {
			near := y / 2
			far := min(max(near-1+2*(y&1), 0), ch-1)
			on := m.COffset(b.Min.X, b.Min.Y+2*near)
			of := m.COffset(b.Min.X, b.Min.Y+2*far)
			h1v2(u, m.Cb[on:on+w], m.Cb[of:of+w], y&1)
			h1v2(v, m.Cr[on:on+w], m.Cr[of:of+w], y&1)
		}
	default:
		up = func(u, v []byte, y int) {
			for x := range w {
				o := m.COffset(b.Min.X+x, b.Min.Y+y)
				u[x], v[x] = m.Cb[o], m.Cr[o]
			}
		}
	}
	// Rows of upsampled chroma, two extra samples for odd widths.
	u := make([]byte, 2*cw+2)
	v := make([]byte, 2*cw+2)
	for y := range h {
		up(u, v, y)
		lo := m.YOffset(b.Min.X, b.Min.Y+y)
		ys := m.Y[lo : lo+w]
		d := dst[3*w*y : 3*w*(y+1)]
		for x, l := range ys {
			yy := int32(l)
			cb, cr := u[x], v[x]
			d[3*x] = sat(yy + jt.cbB[cb])
			d[3*x+1] = sat(yy + (jt.cbG[cb]+jt.crG[cr])>>jScale)
			d[3*x+2] = sat(yy + jt.crR[cr])
		}
	}
}

// h2v1 doubles a chroma row horizontally with libjpeg's triangle filter:
// out[2i] = (3·in[i] + in[i−1] + 1) / 4, out[2i+1] = (3·in[i] + in[i+1] + 2) / 4, edge samples
// replicated (so the outermost outputs equal the edge samples, as libjpeg's special cases give).
func h2v1(out, in []byte) {
	n := len(in)
	for i := range n {
		c := 3 * int(in[i])
		l, r := int(in[max(i-1, 0)]), int(in[min(i+1, n-1)])
		out[2*i] = uint8((c + l + 1) >> 2)
		out[2*i+1] = uint8((c + r + 2) >> 2)
	}
}

// h1v2 makes one output row of vertically doubled chroma with libjpeg-turbo's triangle filter:
// (3·near + far + bias) / 4, bias 1 for the upper row of a pair (lower = 0) and 2 for the
// lower (lower = 1).
func h1v2(out, near, far []byte, lower int) {
	far = far[:len(near)]
	for i, c := range near {
		out[i] = uint8((3*int(c) + int(far[i]) + 1 + lower) >> 2)
	}
}

// h2v2 doubles a chroma row in both directions with libjpeg's triangle filter: column sums
// s = 3·near + far (far: the chroma row on the other side of the output row), then
// out[2i] = (3·s[i] + s[i−1] + 8) / 16 and out[2i+1] = (3·s[i] + s[i+1] + 7) / 16, edge
// columns replicated.
func h2v2(out, near, far []byte) {
	n := len(near)
	far = far[:n]
	s := func(i int) int { i = min(max(i, 0), n-1); return 3*int(near[i]) + int(far[i]) }
	for i := range n {
		c := 3 * s(i)
		out[2*i] = uint8((c + s(i-1) + 8) >> 4)
		out[2*i+1] = uint8((c + s(i+1) + 7) >> 4)
	}
}
