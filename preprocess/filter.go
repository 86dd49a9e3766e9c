package preprocess

import "math"

// Fixed-point precision of the resampling weights. Bilinear uses OpenCV's
// INTER_RESIZE_COEF_BITS (11), as its 8-bit resize does. Area weights get 24 bits, close to
// OpenCV's float32 weights whatever the shrink factor. Horizontal area windows of up to
// packedWindow pixels use packedBits instead, the most that packed lanes hold
// (255·2^13 < 2^21), so that one multiply covers three channels: their rounding moves a
// value by at most packedWindow·½·255/2^13 < 0.13 of a step. Wider windows accumulate each
// channel separately in Q24 and round the result to packedBits.
const (
	linearBits   = 11
	areaBits     = 24
	packedBits   = 13
	packedWindow = 8
)

// axis is the resampling of one axis, in two equivalent forms. As windows (horizontal passes):
// output pixel d reads the win consecutive source pixels from start[d],
// Σ_t wt[d·win+t]·src[start[d]+t]. As taps (vertical passes): Σ_t tw[d·taps+t]·src[idx[d·taps+t]],
// where an index may repeat, because OpenCV's vertical bilinear pass clamps the row indices
// but not the weights and rounds each tap's product separately. The weights are non-negative
// and sum to 1<<bits; windows lie inside the source, every idx of d lies in d's window, and start
// never decreases with d (the row cache relies on these).
type axis struct {
	win   int
	taps  int
	bits  uint
	start []int32
	wt    []int32
	idx   []int32
	tw    []int32
}

// tap is one source pixel's weight in an output pixel, before quantisation.
type tap struct {
	i int
	w float64
}

// linear fills a with OpenCV's bilinear coefficients for resizing src pixels to dst
// (imgproc resize.cpp, INTER_LINEAR): half-pixel centres fx = (d+0.5)·src/dst − 0.5, computed in
// float32 as OpenCV does, weights rounded half-even to Q11 like saturate_cast<short>. Outside
// the picture, horizontal coefficients (clampWeights) are clamped to the edge pixel, while
// vertical ones keep their weights on the clamped row, as OpenCV does. With areaMode it uses
// the coefficients OpenCV's INTER_AREA falls back to when either axis is enlarged:
// sx = ⌊d·src/dst⌋, fx = frac((d+1) − (sx+1)·dst/src).
func (a *axis) linear(src, dst int, areaMode, clampWeights bool) {
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
		if clampWeights && sx < 0 {
			sx, fx = 0, 0
		}
		if clampWeights && sx >= src-1 {
			sx, fx = src-1, 0
		}
		w0 := math.RoundToEven(float64((1 - fx) * (1 << linearBits)))
		w1 := math.RoundToEven(float64(fx * (1 << linearBits)))
		cells[d] = []tap{{min(max(sx, 0), src-1), w0}, {min(max(sx+1, 0), src-1), w1}}
	}
	a.set(src, linearBits, cells, false)
}

// area fills a with OpenCV's INTER_AREA box weights for shrinking src pixels to dst ≤ src
// (resize.cpp computeResizeAreaTab): output pixel d covers source [d·s, (d+1)·s) with s = src/dst,
// each source pixel weighted by the fraction of it inside, over the cell width. The weights are
// rounded to Q(bits) with each output pixel's sum kept exactly 1<<bits.
func (a *axis) area(src, dst int, bits uint) {
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
	a.set(src, bits, cells, true)
}

// set stores per-output taps, both as windows inside [0, src) and as explicit taps. With
// normalize the float weights are scaled to sum to 1<<bits and rounded, the rounding error
// going to the largest; otherwise they are already integers and kept as they are.
func (a *axis) set(src int, bits uint, cells [][]tap, normalize bool) {
	win, taps := 1, 1
	for _, c := range cells {
		win = max(win, c[len(c)-1].i-c[0].i+1)
		taps = max(taps, len(c))
	}
	a.win, a.taps, a.bits = win, taps, bits
	n := len(cells)
	a.start = make([]int32, n)
	a.wt = make([]int32, win*n)
	a.idx = make([]int32, taps*n)
	a.tw = make([]int32, taps*n)
	for d, c := range cells {
		q := make([]int32, len(c))
		if normalize {
			var sum float64
			for _, t := range c {
				sum += t.w
			}
			total, big := int32(0), 0
			for k, t := range c {
				q[k] = int32(math.Round(t.w / sum * float64(int(1)<<bits)))
				total += q[k]
				if q[k] > q[big] {
					big = k
				}
			}
			q[big] += 1<<bits - total
		} else {
			for k, t := range c {
				q[k] = int32(t.w)
			}
		}
		s := max(0, min(c[0].i, src-win))
		a.start[d] = int32(s)
		for k, t := range c {
			a.wt[d*win+t.i-s] += q[k]
			a.idx[d*taps+k], a.tw[d*taps+k] = int32(t.i), q[k]
		}
		for k := len(c); k < taps; k++ { // padding taps: the last index, no weight
			a.idx[d*taps+k] = int32(c[len(c)-1].i)
		}
	}
}

// setAxes fills the x and y resampling of a w×h source resized to nw×nh with interp, choosing as
// OpenCV does: INTER_AREA averages boxes only when neither axis is enlarged, else it uses its
// bilinear variant on both axes.
func setAxes(x, y *axis, interp Interp, w, h, nw, nh int) {
	switch {
	case interp == Area && nw <= w && nh <= h:
		if x.area(w, nw, packedBits); x.win > packedWindow {
			x.area(w, nw, areaBits)
		}
		y.area(h, nh, areaBits)
	case interp == Area:
		x.linear(w, nw, true, true)
		y.linear(h, nh, true, false)
	default:
		x.linear(w, nw, false, true)
		y.linear(h, nh, false, false)
	}
}
