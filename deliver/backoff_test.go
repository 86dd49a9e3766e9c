package deliver

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestBackoff(t *testing.T) {
	lo, hi := 100*time.Millisecond, 30*time.Second
	for attempt := range 100 {
		d := min(lo<<min(attempt, 20), hi)
		for _, rnd := range []func(int64) int64{
			func(int64) int64 { return 0 },
			func(n int64) int64 { return n - 1 },
			rand.Int64N,
		} {
			got := backoff(attempt, lo, hi, rnd)
			if got < d/2 || got > d || got > hi {
				t.Fatalf("attempt %d: %v not in [%v, %v]", attempt, got, d/2, d)
			}
		}
	}
}
