package preprocess

// Lanes of a packed pixel: three 21-bit fields in a uint64, B (or the frame's first channel) in
// the low bits. 21 bits hold an 8-bit value times a weight sum of up to 2^13, so a horizontal
// filter runs on all three channels with one multiply per tap.
const (
	laneBits = 21
	laneMask = 1<<laneBits - 1
)

// packSpan packs pixels [x0, x1) of a row of 3-byte pixels into lanes at the same positions.
func packSpan(dst []uint64, src []byte, x0, x1 int) {
	dst = dst[x0:x1]
	src = src[3*x0 : 3*x1]
	for x := range dst {
		s := src[3*x : 3*x+3 : 3*x+3]
		dst[x] = uint64(s[0]) | uint64(s[1])<<laneBits | uint64(s[2])<<(2*laneBits)
	}
}
