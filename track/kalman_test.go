package track

import (
	"math"
	"testing"
)

type mat [][]float64

func newMat(r, c int) mat {
	m := make(mat, r)
	for i := range m {
		m[i] = make([]float64, c)
	}
	return m
}

func (a mat) mul(b mat) mat {
	out := newMat(len(a), len(b[0]))
	for i := range a {
		for j := range b[0] {
			for k := range b {
				out[i][j] += a[i][k] * b[k][j]
			}
		}
	}
	return out
}

func (a mat) t() mat {
	out := newMat(len(a[0]), len(a))
	for i := range a {
		for j := range a[0] {
			out[j][i] = a[i][j]
		}
	}
	return out
}

func (a mat) add(b mat, s float64) mat {
	out := newMat(len(a), len(a[0]))
	for i := range a {
		for j := range a[0] {
			out[i][j] = a[i][j] + s*b[i][j]
		}
	}
	return out
}

// inv inverts a small matrix by Gauss-Jordan elimination with partial pivoting.
func (a mat) inv() mat {
	n := len(a)
	m := newMat(n, 2*n)
	for i := range n {
		copy(m[i], a[i])
		m[i][n+i] = 1
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		for r := range n {
			if r != c {
				f := m[r][c] / m[c][c]
				for k := range 2 * n {
					m[r][k] -= f * m[c][k]
				}
			}
		}
	}
	out := newMat(n, n)
	for i := range n {
		for j := range n {
			out[i][j] = m[i][n+j] / m[i][i]
		}
	}
	return out
}

func diag(v ...float64) mat {
	m := newMat(len(v), len(v))
	for i, x := range v {
		m[i][i] = x
	}
	return m
}

func fromCov(c [8][8]float64) mat {
	m := newMat(8, 8)
	for i := range 8 {
		copy(m[i], c[i][:])
	}
	return m
}

// textbook runs the filter equations with dense matrices, for comparison.
type textbook struct{ mean, cov mat }

func (k *textbook) predict(dt float64) {
	f := diag(1, 1, 1, 1, 1, 1, 1, 1)
	for i := range 4 {
		f[i][i+4] = dt
	}
	h := k.mean[3][0]
	sp, sv := h/20, h/160
	q := diag(sp*sp, sp*sp, 1e-4, sp*sp, sv*sv, sv*sv, 1e-10, sv*sv)
	k.mean = f.mul(k.mean)
	k.cov = f.mul(k.cov).mul(f.t()).add(q, dt)
}

func (k *textbook) update(z [4]float64) {
	hm := newMat(4, 8)
	for i := range 4 {
		hm[i][i] = 1
	}
	h := k.mean[3][0]
	sr := h / 20
	s := hm.mul(k.cov).mul(hm.t()).add(diag(sr*sr, sr*sr, 1e-2, sr*sr), 1)
	gain := k.cov.mul(hm.t()).mul(s.inv())
	innov := newMat(4, 1)
	proj := hm.mul(k.mean)
	for i := range 4 {
		innov[i][0] = z[i] - proj[i][0]
	}
	k.mean = k.mean.add(gain.mul(innov), 1)
	k.cov = k.cov.add(gain.mul(s).mul(gain.t()), -1)
}

func TestKalmanInitiate(t *testing.T) {
	var k kalman
	k.initiate([4]float64{100, 200, 0.5, 80})
	if k.mean != [8]float64{100, 200, 0.5, 80} {
		t.Fatalf("mean %v", k.mean)
	}
	// Standard deviations 2·80/20 = 8 for x, y, h; 1e-2 for a; 10·80/160 = 5 for vx, vy, vh; 1e-5 for va.
	want := [8]float64{64, 64, 1e-4, 64, 25, 25, 1e-10, 25}
	for i := range 8 {
		if c := k.dense(); math.Abs(c[i][i]-want[i]) > 1e-12 {
			t.Fatalf("cov[%d][%d] = %v, want %v", i, i, c[i][i], want[i])
		}
	}
}

// TestKalmanTextbook compares the block filter with the dense 8×8 textbook equations over a
// sequence of steps of varying length.
func TestKalmanTextbook(t *testing.T) {
	cases := []struct {
		dt float64
		z  [4]float64
	}{
		{1, [4]float64{104, 201, 0.52, 82}},
		{1, [4]float64{108, 203, 0.51, 83}},
		{2, [4]float64{117, 206, 0.50, 85}},
		{0.5, [4]float64{119, 207, 0.50, 85.5}},
		{3, [4]float64{131, 212, 0.49, 88}},
	}
	var k kalman
	k.initiate([4]float64{100, 200, 0.5, 80})
	ref := textbook{mean: newMat(8, 1), cov: fromCov(k.dense())}
	for i := range 8 {
		ref.mean[i][0] = k.mean[i]
	}
	for n, c := range cases {
		k.predict(c.dt)
		ref.predict(c.dt)
		k.update(c.z)
		ref.update(c.z)
		for i := range 8 {
			if d := math.Abs(k.mean[i] - ref.mean[i][0]); d > 1e-9 {
				t.Fatalf("step %d: mean[%d] = %v, textbook %v", n, i, k.mean[i], ref.mean[i][0])
			}
			c := k.dense()
			for j := range 8 {
				if d := math.Abs(c[i][j] - ref.cov[i][j]); d > 1e-9*max(1, math.Abs(ref.cov[i][j])) {
					t.Fatalf("step %d: cov[%d][%d] = %v, textbook %v", n, i, j, c[i][j], ref.cov[i][j])
				}
			}
		}
	}
}

func TestKalmanPredictMotion(t *testing.T) {
	var k kalman
	k.initiate([4]float64{0, 0, 1, 10})
	k.mean[4], k.mean[5] = 3, -2
	k.predict(2.5)
	if k.mean[0] != 7.5 || k.mean[1] != -5 || k.mean[3] != 10 {
		t.Fatalf("mean %v after 2.5 periods at (3,-2) per period", k.mean)
	}
	if b := k.box(); b != [4]float64{2.5, -10, 12.5, 0} {
		t.Fatalf("box %v", b)
	}
}

func TestXyah(t *testing.T) {
	if z := xyah([4]float64{10, 20, 30, 60}); z != [4]float64{20, 40, 0.5, 40} {
		t.Fatalf("xyah %v", z)
	}
}
