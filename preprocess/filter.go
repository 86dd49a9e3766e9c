package preprocess

import "math"

// Fixed-point precision of the resampling weights. Bilinear uses OpenCV's
// INTER_RESIZE_COEF_BITS (11) so that, like OpenCV's 8-bit resize, the result is
// Σ wx·wy·pixel exactly, rounded once. Area weights get 13 bits, the most that packed lanes
// hold (255·2^13 < 2^21), which keeps them within rounding of OpenCV's float weights.
const (
	linearBits = 11
	areaBits   = 13
)

// axis is the resampling of one axis: output pixel d reads the taps consecutive source pixels
// from start[d], output = Σ_t wt[d·taps+t]·src[start[d]+t], the weights non-negative and
// summing to 1<<bits. Windows lie inside the source, and start never decreases with d (the
// row cache relies on both).
type axis struct {
	taps  int
	bits  uint
	start []int32
	wt    []int32
}

// tap is one source pixel's weight in an output pixel, before quantisation.
type tap struct {
	i int
	w float64
}

// linear fills a with OpenCV's bilinear coefficients for resizing src pixels to dst
// (imgproc resize.cpp, INTER_LINEAR): half-pixel centres fx = (d+0.5)·src/dst − 0.5, computed in
// float32 as OpenCV does, clamped to the edges, weights rounded half-even to Q11 like
// saturate_cast<short>. With areaMode it uses the coefficients OpenCV's INTER_AREA falls back
// to when either axis is enlarged: sx = ⌊d·src/dst⌋, fx = frac((d+1) − (sx+1)·dst/src).
func (a *axis) linear(src, dst int, areaMode bool) {
	inv := float64(dst) / float64(src)
	scale := 1 / inv
	cells := make([][]tap, dst)
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
		w0 := math.RoundToEven(float64((1 - fx) * (1 << linearBits)))
		w1 := math.RoundToEven(float64(fx * (1 << linearBits)))
		cells[d] = []tap{{sx, w0}, {min(sx+1, src-1), w1}}
	}
	a.set(src, linearBits, cells, false)
}

// area fills a with OpenCV's INTER_AREA box weights for shrinking src pixels to dst ≤ src
// (resize.cpp computeResizeAreaTab): output pixel d covers source [d·s, (d+1)·s) with s = src/dst,
// each source pixel weighted by the fraction of it inside, over the cell width. The weights are
// rounded to Q13 with each pixel's sum kept exactly 1<<13.
func (a *axis) area(src, dst int) {
	scale := 1 / (float64(dst) / float64(src))
	cells := make([][]tap, dst)
	for d := range dst {
		fsx1 := float64(d) * scale
		fsx2 := fsx1 + scale
		width := min(scale, float64(src)-fsx1)
		sx1, sx2 := int(math.Ceil(fsx1)), int(math.Floor(fsx2))
		sx2 = min(sx2, src-1)
		sx1 = min(sx1, sx2)
		var c []tap
		if float64(sx1)-fsx1 > 1e-3 {
			c = append(c, tap{sx1 - 1, (float64(sx1) - fsx1) / width})
		}
		for sx := sx1; sx < sx2; sx++ {
			c = append(c, tap{sx, 1 / width})
		}
		if fsx2-float64(sx2) > 1e-3 {
			c = append(c, tap{sx2, min(fsx2-float64(sx2), 1, width) / width})
		}
		if len(c) == 0 { // cannot happen for dst ≤ src; keep the table valid regardless
			c = append(c, tap{min(sx1, src-1), 1})
		}
		cells[d] = c
	}
	a.set(src, areaBits, cells, true)
}

// set stores per-output taps as fixed-size windows inside [0, src). With normalize the float
// weights are scaled to sum to 1<<bits and rounded, the rounding error going to the largest;
// otherwise they are already integers and kept as they are.
func (a *axis) set(src int, bits uint, cells [][]tap, normalize bool) {
	taps := 1
	for _, c := range cells {
		taps = max(taps, c[len(c)-1].i-c[0].i+1)
	}
	taps = min(taps, src)
	a.taps, a.bits = taps, bits
	a.start = make([]int32, len(cells))
	a.wt = make([]int32, taps*len(cells))
	for d, c := range cells {
		s := min(c[0].i, src-taps)
		a.start[d] = int32(s)
		w := a.wt[d*taps : (d+1)*taps]
		if !normalize {
			for _, t := range c {
				w[t.i-s] += int32(t.w)
			}
			continue
		}
		var sum float64
		for _, t := range c {
			sum += t.w
		}
		total, big := int32(0), 0
		for _, t := range c {
			q := int32(math.Round(t.w / sum * float64(int(1)<<bits)))
			w[t.i-s] += q
			total += q
			if w[t.i-s] > w[big] {
				big = t.i - s
			}
		}
		w[big] += 1<<bits - total
	}
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
