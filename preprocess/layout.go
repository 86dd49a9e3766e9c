package preprocess

// Interleave writes the planar [3,H,W] values of src (n = H·W pixels a plane) into dst as
// channels-last [H,W,3], for models whose input is NHWC. dst and src hold at least 3n values.
func Interleave(dst, src []float32, n int) {
	p0, p1, p2 := src[:n], src[n:2*n], src[2*n:3*n]
	dst = dst[:3*n]
	for i := range n {
		dst[3*i], dst[3*i+1], dst[3*i+2] = p0[i], p1[i], p2[i]
	}
}
