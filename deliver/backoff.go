package deliver

import "time"

// backoff returns the wait before retry attempt (from 0): d = lo·2^attempt capped at hi, of
// which the upper half is random ("equal jitter": the wait is in [d/2, d]). rnd(n) returns a
// number in [0, n).
func backoff(attempt int, lo, hi time.Duration, rnd func(int64) int64) time.Duration {
	d := lo
	for i := 0; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d - time.Duration(rnd(int64(d/2)+1))
}
