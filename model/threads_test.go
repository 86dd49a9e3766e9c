package model

import (
	"runtime"
	"testing"
)

// TestClampThreads: intra_op_threads: 100000 hung the load silently (issue 14, item 9).
func TestClampThreads(t *testing.T) {
	for _, tc := range []struct{ in, want int }{
		{0, 0}, {1, 1}, {100000, runtime.NumCPU()}, {runtime.NumCPU(), runtime.NumCPU()},
	} {
		if got := ClampThreads(tc.in); got != tc.want {
			t.Errorf("ClampThreads(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
