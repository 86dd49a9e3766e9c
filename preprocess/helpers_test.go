package preprocess

import (
	"math"
	"math/rand/v2"

	"github.com/vinfer/vinfer/frame"
)

// picture is a test image in YUV 4:2:0 (BT.601 limited range) and its BGR conversion by the
// float formula, so that every pixel format can carry the same picture.
type picture struct {
	w, h    int
	y, u, v []byte // planes without padding; u, v are ⌈w/2⌉×⌈h/2⌉
	bgr     []byte // packed, 3w per row
}

// newPicture makes a w×h picture mixing smooth gradients, hard edges and noise, so that
// resampling errors show up.
func newPicture(w, h int, seed uint64) *picture {
	rng := rand.New(rand.NewPCG(seed, 7))
	cw, ch := (w+1)/2, (h+1)/2
	p := &picture{w: w, h: h, y: make([]byte, w*h), u: make([]byte, cw*ch), v: make([]byte, cw*ch)}
	for j := range h {
		for i := range w {
			l := 16 + 219*float64(i+j)/float64(w+h)
			if (i/5+j/7)%3 == 0 {
				l = 235 - l/2
			}
			l += rng.NormFloat64() * 12
			p.y[j*w+i] = uint8(min(max(math.Round(l), 0), 255))
		}
	}
	for j := range ch {
		for i := range cw {
			p.u[j*cw+i] = uint8(16 + rng.IntN(225))
			p.v[j*cw+i] = uint8(128 + 100*math.Sin(float64(i+2*j)/3))
		}
	}
	p.bgr = make([]byte, 3*w*h)
	for j := range h {
		for i := range w {
			b, g, r := yuvToBGRFloat(p.y[j*w+i], p.u[(j/2)*cw+i/2], p.v[(j/2)*cw+i/2], false)
			p.bgr[3*(j*w+i)], p.bgr[3*(j*w+i)+1], p.bgr[3*(j*w+i)+2] = b, g, r
		}
	}
	return p
}

// yuvToBGRFloat is the plain float BT.601 conversion (OpenCV's three-decimal coefficients for
// limited range, T.871 for full range), rounded and saturated.
func yuvToBGRFloat(y, u, v uint8, full bool) (b, g, r uint8) {
	uu, vv := float64(u)-128, float64(v)-128
	var l, cb, cgu, cgv, cr float64
	if full {
		l, cb, cgu, cgv, cr = float64(y), 1.772, -0.344136, -0.714136, 1.402
	} else {
		l, cb, cgu, cgv, cr = 1.164*max(float64(y)-16, 0), 2.018, -0.391, -0.813, 1.596
	}
	sat := func(x float64) uint8 { return uint8(min(max(math.Floor(x+0.5), 0), 255)) }
	return sat(l + cb*uu), sat(l + cgu*uu + cgv*vv), sat(l + cr*vv)
}

// Frames of the picture in each format, with row padding so that strides matter.
func (p *picture) frame(f frame.PixelFormat) *frame.Frame {
	const padding = 13
	w, h, cw, ch := p.w, p.h, (p.w+1)/2, (p.h+1)/2
	fr := &frame.Frame{Format: f, Width: w, Height: h, Device: -1}
	copyPlane := func(i int, src []byte, rowBytes, rows int) {
		s := rowBytes + padding
		buf := make([]byte, s*rows)
		for j := range rows {
			copy(buf[j*s:], src[j*rowBytes:(j+1)*rowBytes])
			for k := rowBytes; k < s; k++ {
				buf[j*s+k] = 0xAA // garbage that must not be read
			}
		}
		fr.Planes[i], fr.Strides[i] = buf[:s*(rows-1)+rowBytes], s
	}
	switch f {
	case frame.FormatI420:
		copyPlane(0, p.y, w, h)
		copyPlane(1, p.u, cw, ch)
		copyPlane(2, p.v, cw, ch)
	case frame.FormatNV12:
		copyPlane(0, p.y, w, h)
		uv := make([]byte, 2*cw*ch)
		for i := range p.u {
			uv[2*i], uv[2*i+1] = p.u[i], p.v[i]
		}
		copyPlane(1, uv, 2*cw, ch)
	case frame.FormatBGR24:
		copyPlane(0, p.bgr, 3*w, h)
	case frame.FormatRGB24:
		rgb := make([]byte, len(p.bgr))
		for i := 0; i < len(rgb); i += 3 {
			rgb[i], rgb[i+1], rgb[i+2] = p.bgr[i+2], p.bgr[i+1], p.bgr[i]
		}
		copyPlane(0, rgb, 3*w, h)
	}
	return fr
}

// referenceResize is a straightforward float implementation of the spec on a packed BGR
// picture: OpenCV's sampling geometry evaluated in float64, one rounding to 8 bits, then the
// normalization formula. It returns [3,H,W].
func referenceResize(bgr []byte, w, h int, s Spec) []float32 {
	pl := s.Place(w, h)
	out := make([]float32, 3*s.Width*s.Height)
	for c := range 3 {
		for i := range s.Width * s.Height {
			out[c*s.Width*s.Height+i] = (float32(s.Pad)*s.Scale - s.Mean[c]) / s.Std[c]
		}
	}
	area := s.Interp == Area && pl.Width <= w && pl.Height <= h
	xw := refWeights(w, pl.Width, s.Interp == Area, area)
	yw := refWeights(h, pl.Height, s.Interp == Area, area)
	for dy := range pl.Height {
		for dx := range pl.Width {
			var acc [3]float64
			for _, ty := range yw[dy] {
				for _, tx := range xw[dx] {
					o := 3 * (ty.i*w + tx.i)
					for c := range 3 {
						acc[c] += ty.w * tx.w * float64(bgr[o+c])
					}
				}
			}
			for sc := range 3 {
				v := float32(min(max(math.Floor(acc[sc]+0.5), 0), 255))
				oc := sc
				if s.Color == RGB {
					oc = 2 - sc
				}
				out[oc*s.Width*s.Height+(pl.Y+dy)*s.Width+pl.X+dx] = (v*s.Scale - s.Mean[oc]) / s.Std[oc]
			}
		}
	}
	return out
}

type refTap struct {
	i int
	w float64
}

// refWeights gives, per output pixel, the source pixels and weights of one axis. Sampling
// positions are computed as OpenCV computes them (scale = 1/(dst/src), bilinear positions
// rounded to float32), so that the reference picks the same source pixel where a position
// lands on an integer up to rounding.
func refWeights(src, dst int, areaInterp, box bool) [][]refTap {
	inv := float64(dst) / float64(src)
	scale := 1 / inv
	out := make([][]refTap, dst)
	for d := range dst {
		switch {
		case box: // the source interval [d·s, (d+1)·s) averaged, clipped to the picture
			lo, hi := float64(d)*scale, min(float64(d+1)*scale, float64(src))
			for i := int(math.Floor(lo)); i < src && float64(i) < hi; i++ {
				if ov := min(hi, float64(i+1)) - max(lo, float64(i)); ov > 0 {
					out[d] = append(out[d], refTap{i, ov / (hi - lo)})
				}
			}
		default:
			var x0 int
			var fx float64
			if areaInterp { // OpenCV's INTER_AREA when enlarging
				x0 = int(math.Floor(float64(d) * scale))
				fx = float64(float32(float64(d+1) - float64(x0+1)*inv))
				if fx <= 0 {
					fx = 0
				} else {
					fx -= math.Floor(fx)
				}
			} else { // half-pixel centres
				f := float64(float32((float64(d)+0.5)*scale - 0.5))
				x0 = int(math.Floor(f))
				fx = f - float64(x0)
			}
			if x0 < 0 {
				x0, fx = 0, 0
			}
			if x0 >= src-1 {
				x0, fx = src-1, 0
			}
			out[d] = []refTap{{x0, 1 - fx}, {min(x0+1, src-1), fx}}
		}
	}
	return out
}

func maxAbsDiff(a, b []float32) (float64, int) {
	m, at := 0.0, -1
	for i := range a {
		if d := math.Abs(float64(a[i] - b[i])); d > m {
			m, at = d, i
		}
	}
	return m, at
}

// oneLevel is the size of one 8-bit step after the spec's normalization, the largest per
// channel.
func oneLevel(s Spec) float64 {
	m := 0.0
	for c := range 3 {
		m = max(m, math.Abs(float64(s.Scale/s.Std[c])))
	}
	return m
}
