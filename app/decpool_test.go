package app

import "testing"

// TestPoolSize: the benchmark overrides of a GPU pool's sizes are bounded; bad values keep the
// default.
func TestPoolSize(t *testing.T) {
	for _, c := range []struct {
		v          string
		least, out int
	}{{"", 1, 8}, {"16", 1, 16}, {"0", 1, 8}, {"0", 0, -1}, {"300", 1, 8}, {"-3", 0, 8}, {"x", 1, 8}} {
		t.Setenv("VINFER_DECPOOL_PROBERS", c.v)
		if got := poolSize("VINFER_DECPOOL_PROBERS", 8, c.least); got != c.out {
			t.Errorf("%q (least %d): %d, want %d", c.v, c.least, got, c.out)
		}
	}
}
