package preprocess

// Resampling kernels. Horizontal passes work on packed pixels (three 21-bit lanes, one
// multiply per tap for all channels); vertical passes unpack the lanes, round once to 8 bits
// and normalise through the output tables. The common tap counts are unrolled.

// hResample resamples a packed row horizontally: dst[d] = Σ_t wt[d·taps+t]·src[start[d]+t].
func hResample(dst, src []uint64, ax *axis) {
	n := len(dst)
	start := ax.start[:n]
	switch ax.win {
	case 1:
		wt := ax.wt[:n]
		for d, i := range start {
			dst[d] = uint64(wt[d]) * src[i]
		}
	case 2:
		wt := ax.wt[:2*n]
		for d, i := range start {
			s := src[i : i+2 : i+2]
			w := wt[2*d : 2*d+2 : 2*d+2]
			dst[d] = uint64(w[0])*s[0] + uint64(w[1])*s[1]
		}
	case 3:
		wt := ax.wt[:3*n]
		for d, i := range start {
			s := src[i : i+3 : i+3]
			w := wt[3*d : 3*d+3 : 3*d+3]
			dst[d] = uint64(w[0])*s[0] + uint64(w[1])*s[1] + uint64(w[2])*s[2]
		}
	case 4:
		wt := ax.wt[:4*n]
		for d, i := range start {
			s := src[i : i+4 : i+4]
			w := wt[4*d : 4*d+4 : 4*d+4]
			dst[d] = uint64(w[0])*s[0] + uint64(w[1])*s[1] + uint64(w[2])*s[2] + uint64(w[3])*s[3]
		}
	default:
		taps := ax.win
		wt := ax.wt[:taps*n]
		for d, i := range start {
			s := src[i : int(i)+taps]
			w := wt[taps*d : taps*(d+1)]
			var a uint64
			for t, p := range s {
				a += uint64(w[t]) * p
			}
			dst[d] = a
		}
	}
}

// hWide resamples a packed row horizontally with weights of more than packedBits bits,
// accumulating each channel separately, and packs the results rounded to Q(packedBits).
func hWide(dst, src []uint64, ax *axis) {
	n := len(dst)
	start := ax.start[:n]
	win := ax.win
	wt := ax.wt[:win*n]
	down := ax.bits - packedBits
	round := uint64(1) << (down - 1)
	for d, i := range start {
		s := src[i : int(i)+win]
		w := wt[win*d : win*(d+1)]
		a0, a1, a2 := round, round, round
		for t, p := range s {
			k := uint64(w[t])
			a0 += k * (p & laneMask)
			a1 += k * (p >> laneBits & laneMask)
			a2 += k * (p >> (2 * laneBits))
		}
		dst[d] = a0>>down | a1>>down<<laneBits | a2>>down<<(2*laneBits)
	}
}

// vLinear blends two horizontally resampled rows (Q11) with Q11 weights, rounds to 8 bits
// and writes the normalised values to the three planes.
//
// The rounding is that of OpenCV's vectorised 8-bit bilinear resize (resize.cpp,
// VResizeLinearVec_32s8u, which handles whole rows on x86 and ARM): each row is shifted right
// by 4, multiplied by its weight keeping the high 16 bits, and the sum rounded from Q2:
// ((r0>>4)·w0>>16 + (r1>>4)·w1>>16 + 2) >> 2. This reproduces OpenCV 4.6's output bit for bit,
// where the exact Σ w·r rounded once would differ by one in about a tenth of the values.
func vLinear(p0, p1, p2 []float32, r0, r1 []uint64, w0, w1 int32, luts [3]*[256]float32) {
	n := len(p0)
	p1, p2, r0, r1 = p1[:n], p2[:n], r0[:n], r1[:n]
	a, b := uint64(w0), uint64(w1)
	l0, l1, l2 := luts[0], luts[1], luts[2]
	for d := range n {
		s, t := r0[d], r1[d]
		p0[d] = l0[uint8(((s&laneMask>>4)*a>>16+(t&laneMask>>4)*b>>16+2)>>2)]
		p1[d] = l1[uint8(((s>>laneBits&laneMask>>4)*a>>16+(t>>laneBits&laneMask>>4)*b>>16+2)>>2)]
		p2[d] = l2[uint8(((s>>(2*laneBits)>>4)*a>>16+(t>>(2*laneBits)>>4)*b>>16+2)>>2)]
	}
}

// vArea3 blends three resampled rows in Q(shift), rounds to 8 bits and writes the normalised
// values to the three planes.
func vArea3(p0, p1, p2 []float32, r0, r1, r2 []uint64, wt []int32, shift uint, luts [3]*[256]float32) {
	round := uint64(1) << (shift - 1)
	n := len(p0)
	p1, p2, r0, r1, r2 = p1[:n], p2[:n], r0[:n], r1[:n], r2[:n]
	a, b, c := uint64(wt[0]), uint64(wt[1]), uint64(wt[2])
	l0, l1, l2 := luts[0], luts[1], luts[2]
	for d := range n {
		s, t, u := r0[d], r1[d], r2[d]
		p0[d] = l0[uint8((a*(s&laneMask)+b*(t&laneMask)+c*(u&laneMask)+round)>>shift)]
		p1[d] = l1[uint8((a*(s>>laneBits&laneMask)+b*(t>>laneBits&laneMask)+c*(u>>laneBits&laneMask)+round)>>shift)]
		p2[d] = l2[uint8((a*(s>>(2*laneBits))+b*(t>>(2*laneBits))+c*(u>>(2*laneBits))+round)>>shift)]
	}
}

// vGeneral blends any number of resampled rows, rounds to 8 bits and writes the normalised
// values to the three planes.
func vGeneral(p0, p1, p2 []float32, rows [][]uint64, wt []int32, shift uint, luts [3]*[256]float32) {
	round := uint64(1) << (shift - 1)
	n := len(p0)
	p1, p2 = p1[:n], p2[:n]
	l0, l1, l2 := luts[0], luts[1], luts[2]
	for d := range n {
		a0, a1, a2 := round, round, round
		for t, r := range rows {
			w, s := uint64(wt[t]), r[d]
			a0 += w * (s & laneMask)
			a1 += w * (s >> laneBits & laneMask)
			a2 += w * (s >> (2 * laneBits))
		}
		p0[d] = l0[uint8(a0>>shift)]
		p1[d] = l1[uint8(a1>>shift)]
		p2[d] = l2[uint8(a2>>shift)]
	}
}
