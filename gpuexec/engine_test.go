package gpuexec

import (
	"errors"
	"testing"

	"github.com/vinfer/vinfer/cuda"
)

func TestOutputLayout(t *testing.T) {
	for _, tc := range []struct {
		shape   []int64
		dynamic bool
		per     int
		batched bool
		err     bool
	}{
		{[]int64{1, 3549, 85}, false, 3549 * 85, false, false},
		{[]int64{-1, 84, 8400}, true, 84 * 8400, true, false},
		{[]int64{-1, 84, 8400}, false, 0, false, true}, // a fixed-batch model with an unknown dim
		{[]int64{-1, -1, 6}, true, 0, false, true},     // detections: data-dependent
		{[]int64{}, false, 1, false, false},            // a scalar
	} {
		per, batched, err := outputLayout(tc.shape, tc.dynamic)
		if per != tc.per || batched != tc.batched || (err != nil) != tc.err {
			t.Errorf("%v dynamic %v: %d %v %v", tc.shape, tc.dynamic, per, batched, err)
		}
	}
}

// TestOpenWithoutGPU: without a driver or device Open fails with the driver's reason and never
// loads a session.
func TestOpenWithoutGPU(t *testing.T) {
	if cuda.Available() {
		t.Skip("this machine has a CUDA device")
	}
	_, err := Open(0, Options{Name: "m", Graph: true}, func(*cuda.Stream, bool) (Session, error) {
		t.Fatal("load called without a GPU")
		return nil, nil
	})
	if !errors.Is(err, cuda.ErrNoDriver) && !errors.Is(err, cuda.ErrNoDevice) {
		t.Fatalf("err = %v", err)
	}
}
