package track

import "math"

// The Kalman filter of ByteTrack (and DeepSORT before it): the state is x, y (box centre), a
// (width/height), h (height) and their velocities; motion is constant velocity; the noise is
// proportional to the box height with these weights.
const (
	stdWeightPosition = 1.0 / 20
	stdWeightVelocity = 1.0 / 160
)

// kalman is the filter state of one track: mean [x y a h vx vy va vh] and its covariance.
type kalman struct {
	mean [8]float64
	cov  [8][8]float64
}

// initiate starts the filter at measurement z = [x y a h] with zero velocity.
func (k *kalman) initiate(z [4]float64) {
	h := z[3]
	std := [8]float64{
		2 * stdWeightPosition * h, 2 * stdWeightPosition * h, 1e-2, 2 * stdWeightPosition * h,
		10 * stdWeightVelocity * h, 10 * stdWeightVelocity * h, 1e-5, 10 * stdWeightVelocity * h,
	}
	k.mean = [8]float64{z[0], z[1], z[2], z[3]}
	k.cov = [8][8]float64{}
	for i, s := range std {
		k.cov[i][i] = s * s
	}
}

// predict moves the state dt frame periods ahead: mean ← F·mean, cov ← F·cov·Fᵀ + dt·Q, with F the
// constant-velocity transition over dt and Q ByteTrack's per-frame process noise (its diagonal
// from the height before the step). dt = 1 is ByteTrack's frame step.
func (k *kalman) predict(dt float64) {
	h := k.mean[3]
	sp, sv := stdWeightPosition*h, stdWeightVelocity*h
	q := [8]float64{sp * sp, sp * sp, 1e-4, sp * sp, sv * sv, sv * sv, 1e-10, sv * sv}
	for i := range 4 {
		k.mean[i] += dt * k.mean[i+4]
	}
	p := &k.cov
	var n [8][8]float64
	for i := range 4 {
		for j := range 4 {
			c := p[i+4][j+4]
			n[i][j] = p[i][j] + dt*(p[i][j+4]+p[i+4][j]) + dt*dt*c
			n[i][j+4] = p[i][j+4] + dt*c
			n[i+4][j] = p[i+4][j] + dt*c
			n[i+4][j+4] = c
		}
	}
	for i := range 8 {
		n[i][i] += dt * q[i]
	}
	*p = n
}

// update corrects the state with measurement z = [x y a h]; the measurement noise follows the
// predicted height.
func (k *kalman) update(z [4]float64) {
	h := k.mean[3]
	sr := stdWeightPosition * h
	r := [4]float64{sr * sr, sr * sr, 1e-2, sr * sr}
	p := &k.cov

	// S = H·P·Hᵀ + R (the position block), factored as L·Lᵀ.
	var s [4][4]float64
	for i := range 4 {
		for j := range 4 {
			s[i][j] = p[i][j]
		}
		s[i][i] += r[i]
	}
	var l [4][4]float64
	for j := range 4 {
		d := s[j][j]
		for m := range j {
			d -= l[j][m] * l[j][m]
		}
		d = math.Sqrt(d)
		l[j][j] = d
		for i := j + 1; i < 4; i++ {
			v := s[i][j]
			for m := range j {
				v -= l[i][m] * l[j][m]
			}
			l[i][j] = v / d
		}
	}
	// Gain K = P·Hᵀ·S⁻¹: row r of K solves S·kᵣ = (P·Hᵀ)ᵣ.
	var gain [8][4]float64
	for row := range 8 {
		var y [4]float64
		for i := range 4 {
			v := p[row][i]
			for m := range i {
				v -= l[i][m] * y[m]
			}
			y[i] = v / l[i][i]
		}
		for i := 3; i >= 0; i-- {
			v := y[i]
			for m := i + 1; m < 4; m++ {
				v -= l[m][i] * gain[row][m]
			}
			gain[row][i] = v / l[i][i]
		}
	}
	var innov [4]float64
	for i := range 4 {
		innov[i] = z[i] - k.mean[i]
	}
	for row := range 8 {
		for i := range 4 {
			k.mean[row] += gain[row][i] * innov[i]
		}
	}
	// P ← P − K·S·Kᵀ = P − K·(H·P).
	var hp [4][8]float64
	for i := range 4 {
		hp[i] = p[i]
	}
	for row := range 8 {
		for c := range 8 {
			v := 0.0
			for i := range 4 {
				v += gain[row][i] * hp[i][c]
			}
			p[row][c] -= v
		}
	}
}

// xyah converts a box [x1 y1 x2 y2] to the measurement [centre x, centre y, w/h, h].
func xyah(b [4]float64) [4]float64 {
	w, h := b[2]-b[0], b[3]-b[1]
	return [4]float64{b[0] + w/2, b[1] + h/2, w / h, h}
}

// box returns the state's box [x1 y1 x2 y2].
func (k *kalman) box() [4]float64 {
	h := k.mean[3]
	w := k.mean[2] * h
	x1, y1 := k.mean[0]-w/2, k.mean[1]-h/2
	return [4]float64{x1, y1, x1 + w, y1 + h}
}
