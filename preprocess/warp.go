package preprocess

import (
	"errors"
	"fmt"
	"math"

	"github.com/vinfer/vinfer/frame"
)

// ErrQuad is returned by Rectify for a quadrilateral that has no perspective transform (three
// corners on a line, or a corner not finite).
var ErrQuad = errors.New("preprocess: the quadrilateral is degenerate")

// Rectify fills dst with the quadrilateral quad of f (corners clockwise from the top left, in
// f's pixels) seen straight on, as a w×h BGR24 picture: the perspective transform mapping dst's
// corners onto quad's, sampled bilinearly (luma; chroma nearest for YUV frames, BT.601).
// Samples outside f take its nearest edge pixel. dst's plane is reused when it is large
// enough. Errors: a frame Run could not read, a size outside 1…16384, ErrQuad.
func Rectify(dst, f *frame.Frame, quad [4][2]float32, w, h int) error {
	if err := checkFrame(f); err != nil {
		return err
	}
	if w <= 0 || h <= 0 || w > maxSide || h > maxSide {
		return fmt.Errorf("preprocess: rectified size %dx%d must be positive and at most %d", w, h, maxSide)
	}
	hm, ok := homography([4][2]float64{{0, 0}, {float64(w), 0}, {float64(w), float64(h)}, {0, float64(h)}}, quad)
	if !ok {
		return ErrQuad
	}
	plane := dst.Planes[0]
	if cap(plane) < 3*w*h {
		plane = make([]byte, 3*w*h)
	}
	*dst = frame.Frame{Format: frame.FormatBGR24, Width: w, Height: h, Device: -1}
	dst.Planes[0], dst.Strides[0] = plane[:3*w*h], 3*w
	s := sampler{f: f}
	if f.Format == frame.FormatI420 || f.Format == frame.FormatNV12 {
		s.yuv = newYUVTables(f.FullRange)
	}
	for v := range h {
		row := dst.Planes[0][v*3*w:]
		for u := range w {
			fu, fv := float64(u)+0.5, float64(v)+0.5
			d := hm[6]*fu + hm[7]*fv + 1
			x := (hm[0]*fu+hm[1]*fv+hm[2])/d - 0.5
			y := (hm[3]*fu+hm[4]*fv+hm[5])/d - 0.5
			s.bgr(row[3*u:3*u+3], x, y)
		}
	}
	return nil
}

// homography solves for the 3×3 matrix (h[8] = 1) mapping each from[i] to to[i]; false when the
// system is singular.
func homography(from [4][2]float64, to [4][2]float32) ([8]float64, bool) {
	var a [8][9]float64
	for i := range 4 {
		x, y := from[i][0], from[i][1]
		X, Y := float64(to[i][0]), float64(to[i][1])
		if math.IsNaN(X) || math.IsNaN(Y) || math.IsInf(X, 0) || math.IsInf(Y, 0) {
			return [8]float64{}, false
		}
		a[2*i] = [9]float64{x, y, 1, 0, 0, 0, -x * X, -y * X, X}
		a[2*i+1] = [9]float64{0, 0, 0, x, y, 1, -x * Y, -y * Y, Y}
	}
	for c := range 8 { // Gauss-Jordan with partial pivoting
		p := c
		for r := c + 1; r < 8; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-9 {
			return [8]float64{}, false
		}
		a[c], a[p] = a[p], a[c]
		for r := range 8 {
			if r == c {
				continue
			}
			k := a[r][c] / a[c][c]
			for j := c; j < 9; j++ {
				a[r][j] -= k * a[c][j]
			}
		}
	}
	var h [8]float64
	for i := range 8 {
		h[i] = a[i][8] / a[i][i]
	}
	return h, true
}

// sampler reads f's pixels as BGR.
type sampler struct {
	f   *frame.Frame
	yuv *yuvTables
}

func clampInt(v, lo, hi int) int { return min(max(v, lo), hi) }

// bgr writes the bilinear sample at (x, y) (pixel centres at integers) into out.
func (s *sampler) bgr(out []byte, x, y float64) {
	f := s.f
	x0, y0 := int(math.Floor(x)), int(math.Floor(y))
	ax, ay := x-float64(x0), y-float64(y0)
	xs := [2]int{clampInt(x0, 0, f.Width-1), clampInt(x0+1, 0, f.Width-1)}
	ys := [2]int{clampInt(y0, 0, f.Height-1), clampInt(y0+1, 0, f.Height-1)}
	wts := [4]float64{(1 - ax) * (1 - ay), ax * (1 - ay), (1 - ax) * ay, ax * ay}
	switch f.Format {
	case frame.FormatBGR24, frame.FormatRGB24:
		var acc [3]float64
		for k := range 4 {
			p := f.Planes[0][ys[k/2]*f.Strides[0]+3*xs[k%2]:]
			for c := range 3 {
				acc[c] += wts[k] * float64(p[c])
			}
		}
		if f.Format == frame.FormatRGB24 {
			acc[0], acc[2] = acc[2], acc[0]
		}
		for c := range 3 {
			out[c] = uint8(acc[c] + 0.5)
		}
	default:
		var luma float64
		for k := range 4 {
			luma += wts[k] * float64(f.Planes[0][ys[k/2]*f.Strides[0]+xs[k%2]])
		}
		cx, cy := clampInt(int(x+0.5), 0, f.Width-1)/2, clampInt(int(y+0.5), 0, f.Height-1)/2
		var u, v byte
		if f.Format == frame.FormatNV12 {
			u, v = f.Planes[1][cy*f.Strides[1]+2*cx], f.Planes[1][cy*f.Strides[1]+2*cx+1]
		} else {
			u, v = f.Planes[1][cy*f.Strides[1]+cx], f.Planes[2][cy*f.Strides[2]+cx]
		}
		t := s.yuv
		yv := t.y[uint8(luma+0.5)]
		out[0] = clip[(yv+t.bu[u])>>yuvShift]
		out[1] = clip[(yv+t.gu[u]+t.gv[v])>>yuvShift]
		out[2] = clip[(yv+t.rv[v])>>yuvShift]
	}
}
