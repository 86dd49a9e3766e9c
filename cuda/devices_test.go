package cuda

import (
	"errors"
	"strings"
	"testing"
)

func TestDevicesPickRoundRobin(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n     int
		wants []int // -1: round-robin
		got   []int
	}{
		{"one gpu", 1, []int{-1, -1, -1}, []int{0, 0, 0}},
		{"three gpus", 3, []int{-1, -1, -1, -1, -1}, []int{0, 1, 2, 0, 1}},
		{"explicit ordinals do not move the rotation", 2, []int{1, -1, 1, 1, -1, -1}, []int{1, 0, 1, 1, 1, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			next := 0
			for i, w := range tc.wants {
				got, err := pick(w, tc.n, &next)
				if err != nil || got != tc.got[i] {
					t.Fatalf("stream %d (want %d): got %d, %v; want %d", i, w, got, err, tc.got[i])
				}
			}
		})
	}
}

func TestDevicesPickMissingOrdinal(t *testing.T) {
	next := 0
	_, err := pick(2, 2, &next)
	if err == nil || !strings.Contains(err.Error(), "gpu 2 does not exist: 2 CUDA device(s) visible (0…1") {
		t.Fatalf("err = %v", err)
	}
}

// TestPickWithoutGPU: on a machine without a GPU (CI), Pick says so in words a user can act on
// and wraps ErrNoGPU and the driver's reason.
func TestDevicesPickWithoutGPU(t *testing.T) {
	if Available() {
		t.Skip("this machine has a CUDA device")
	}
	var d Devices
	defer d.Close()
	_, err := d.Pick(-1)
	if !errors.Is(err, ErrNoGPU) || !(errors.Is(err, ErrNoDriver) || errors.Is(err, ErrNoDevice)) {
		t.Fatalf("err = %v, want ErrNoGPU wrapping the driver's reason", err)
	}
	if !strings.HasPrefix(err.Error(), "no CUDA device: ") {
		t.Fatalf("err = %q", err)
	}
	if len(d.Opened()) != 0 {
		t.Fatal("a device was opened")
	}
}
