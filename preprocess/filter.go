package preprocess

import "math"

// Fixed-point precision of the resampling weights. Bilinear uses OpenCV's
// INTER_RESIZE_COEF_BITS (11) so that, like OpenCV's 8-bit resize, the result is
// Σ wx·wy·pixel exactly, rounded once; area weights need more bits to stay within rounding of
// OpenCV's float weights when many source pixels fall into one output pixel.
const (
	linearBits = 11
	areaBits   = 14
)

// axis is the resampling of one axis: output pixel d is Σ_t wt[d·taps+t]·src[idx[d·taps+t]],
// the weights being non-negative and summing to 1<<bits. Within an output pixel the indices
// ascend, and the first index never decreases from one output pixel to the next (row caching
// relies on this).
type axis struct {
	taps int
	bits uint
	idx  []int32
	wt   []int32
}

// linear fills a with OpenCV's bilinear coefficients for resizing src pixels to dst
// (imgproc resize.cpp, INTER_LINEAR): half-pixel centres fx = (d+0.5)·src/dst − 0.5, computed in
// float32 as OpenCV does, clamped to the edges, weights rounded to Q11. With areaMode it uses
// the coefficients OpenCV's INTER_AREA falls back to when either axis is enlarged.
func (a *axis) linear(src, dst int, areaMode bool) {
	a.reset(2, linearBits, dst)
	inv := float64(dst) / float64(src)
	scale := 1 / inv
	for d := range dst {
		var sx int
		var fx float32
		if !areaMode {
			fx = float32((float64(d)+0.5)*scale - 0.5)
			sx = int(math.Floor(float64(fx)))
			fx -= float32(sx)
		} else {
			sx = int(math.Floor(float64(d) * scale))
			fx = float32(float64(d+1) - float64(sx+1)*inv)
			if fx <= 0 {
				fx = 0
			} else {
				fx -= float32(math.Floor(float64(fx)))
			}
		}
		if sx < 0 {
			sx, fx = 0, 0
		}
		if sx >= src-1 {
			sx, fx = src-1, 0
		}
		a.idx[2*d] = int32(sx)
		a.idx[2*d+1] = int32(min(sx+1, src-1))
		a.wt[2*d] = int32(math.RoundToEven(float64((1 - fx) * (1 << linearBits))))
		a.wt[2*d+1] = int32(math.RoundToEven(float64(fx * (1 << linearBits))))
	}
}

// area fills a with OpenCV's INTER_AREA box weights for shrinking src pixels to dst ≤ src
// (resize.cpp computeResizeAreaTab): output pixel d covers source [d·s, (d+1)·s) with s = src/dst,
// each source pixel weighted by the fraction of it inside, weights normalised by the cell width.
// The float weights are rounded to Q14 with their sum kept exactly 1<<14.
func (a *axis) area(src, dst int) {
	scale := 1 / (float64(dst) / float64(src))
	type tap struct {
		i int
		w float64
	}
	var cell [][]tap
	maxTaps := 1
	for d := range dst {
		fsx1 := float64(d) * scale
		fsx2 := fsx1 + scale
		width := min(scale, float64(src)-fsx1)
		sx1, sx2 := int(math.Ceil(fsx1)), int(math.Floor(fsx2))
		sx2 = min(sx2, src-1)
		sx1 = min(sx1, sx2)
		var t []tap
		if float64(sx1)-fsx1 > 1e-3 {
			t = append(t, tap{sx1 - 1, (float64(sx1) - fsx1) / width})
		}
		for sx := sx1; sx < sx2; sx++ {
			t = append(t, tap{sx, 1 / width})
		}
		if fsx2-float64(sx2) > 1e-3 {
			t = append(t, tap{sx2, min(fsx2-float64(sx2), 1, width) / width})
		}
		if len(t) == 0 { // cannot happen for dst ≤ src; keep the table valid regardless
			t = append(t, tap{min(sx1, src-1), 1})
		}
		cell = append(cell, t)
		maxTaps = max(maxTaps, len(t))
	}
	a.reset(maxTaps, areaBits, dst)
	for d, t := range cell {
		var sum float64
		for _, p := range t {
			sum += p.w
		}
		o := d * maxTaps
		total, big := int32(0), o
		for k := range maxTaps {
			p := t[min(k, len(t)-1)]
			w := int32(0)
			if k < len(t) {
				w = int32(math.Round(p.w / sum * (1 << areaBits)))
			}
			a.idx[o+k], a.wt[o+k] = int32(p.i), w
			total += w
			if w > a.wt[big] {
				big = o + k
			}
		}
		a.wt[big] += 1<<areaBits - total
	}
}

func (a *axis) reset(taps int, bits uint, n int) {
	a.taps, a.bits = taps, bits
	if cap(a.idx) < taps*n {
		a.idx = make([]int32, taps*n)
		a.wt = make([]int32, taps*n)
	}
	a.idx, a.wt = a.idx[:taps*n], a.wt[:taps*n]
}

// setAxes fills the x and y resampling of a w×h source resized to nw×nh with interp, choosing as
// OpenCV does: INTER_AREA averages boxes only when neither axis is enlarged, else it uses its
// bilinear variant on both axes.
func setAxes(x, y *axis, interp Interp, w, h, nw, nh int) {
	switch {
	case interp == Area && nw <= w && nh <= h:
		x.area(w, nw)
		y.area(h, nh)
	case interp == Area:
		x.linear(w, nw, true)
		y.linear(h, nh, true)
	default:
		x.linear(w, nw, false)
		y.linear(h, nh, false)
	}
}
