package track

// The Kalman filter of ByteTrack (and DeepSORT before it): the state is x, y (box centre), a
// (width/height), h (height) and their velocities; motion is constant velocity; the noise is
// proportional to the box height with these weights.
const (
	stdWeightPosition = 1.0 / 20
	stdWeightVelocity = 1.0 / 160
)

// kalman is the filter state of one track: mean [x y a h vx vy va vh] and its covariance. With
// ByteTrack's diagonal noises, the transition that couples each coordinate only with its own
// velocity and the measurement of positions only, the 8×8 covariance stays block-diagonal: four
// independent 2×2 blocks (coordinate, its velocity), which cov holds as [var pos, cov, var vel].
// The filter computes exactly the 8×8 equations, in fewer operations.
type kalman struct {
	mean [8]float64
	cov  [4][3]float64
}

// initiate starts the filter at measurement z = [x y a h] with zero velocity.
func (k *kalman) initiate(z [4]float64) {
	h := z[3]
	pos := [4]float64{2 * stdWeightPosition * h, 2 * stdWeightPosition * h, 1e-2, 2 * stdWeightPosition * h}
	vel := [4]float64{10 * stdWeightVelocity * h, 10 * stdWeightVelocity * h, 1e-5, 10 * stdWeightVelocity * h}
	k.mean = [8]float64{z[0], z[1], z[2], z[3]}
	for i := range 4 {
		k.cov[i] = [3]float64{pos[i] * pos[i], 0, vel[i] * vel[i]}
	}
}

// predict moves the state dt frame periods ahead: mean ← F·mean, cov ← F·cov·Fᵀ + dt·Q, with F the
// constant-velocity transition over dt and Q ByteTrack's per-frame process noise (its diagonal
// from the height before the step). dt = 1 is ByteTrack's frame step.
func (k *kalman) predict(dt float64) {
	h := k.mean[3]
	sp, sv := stdWeightPosition*h, stdWeightVelocity*h
	qp := [4]float64{sp * sp, sp * sp, 1e-4, sp * sp}
	qv := [4]float64{sv * sv, sv * sv, 1e-10, sv * sv}
	for i := range 4 {
		k.mean[i] += dt * k.mean[i+4]
		c := &k.cov[i]
		pp, pv, vv := c[0], c[1], c[2]
		c[0] = pp + dt*2*pv + dt*dt*vv + dt*qp[i]
		c[1] = pv + dt*vv
		c[2] = vv + dt*qv[i]
	}
}

// update corrects the state with measurement z = [x y a h]; the measurement noise follows the
// predicted height.
func (k *kalman) update(z [4]float64) {
	sr := stdWeightPosition * k.mean[3]
	r := [4]float64{sr * sr, sr * sr, 1e-2, sr * sr}
	for i := range 4 {
		c := &k.cov[i]
		pp, pv, vv := c[0], c[1], c[2]
		s := pp + r[i]
		kp, kv := pp/s, pv/s // gain
		innov := z[i] - k.mean[i]
		k.mean[i] += kp * innov
		k.mean[i+4] += kv * innov
		c[0] = pp - kp*pp
		c[1] = pv - kp*pv
		c[2] = vv - kv*pv
	}
}

// dense returns the full 8×8 covariance.
func (k *kalman) dense() [8][8]float64 {
	var p [8][8]float64
	for i, c := range k.cov {
		p[i][i], p[i][i+4], p[i+4][i], p[i+4][i+4] = c[0], c[1], c[1], c[2]
	}
	return p
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
