package activity

import (
	"testing"
	"time"
)

// TestGateCrop: with Crop, a frame with motion is inferred on the moving square's
// neighbourhood (a margin of at least cropMinMargin, at least a third of the frame per axis),
// a live object's area is kept in the crop until Hold has passed, a crop over half the frame
// falls back to the whole frame, and a frame with nothing to crop to (the first, a refresh)
// is whole.
func TestGateCrop(t *testing.T) {
	s := settings(false)
	s.Crop = true
	sim := newSim(t, s, clip{gop: time.Second, moving: func(p time.Duration) bool { return p >= time.Second }})
	sim.run(0, 100*time.Millisecond)
	if _, _, _, _, ok := sim.g.Crop(sim.f); ok {
		t.Fatal("the first frame, still: cropped")
	}
	sim.run(100*time.Millisecond, 1500*time.Millisecond)
	x, y, w, h, ok := sim.g.Crop(sim.f) // the square: 40×40 at rows 60–100
	if !ok || y > 60-cropMinMargin || y+h < 100+cropMinMargin || w < 320/cropMinDiv || h < 180/cropMinDiv || w*h > 320*180/2 {
		t.Fatalf("crop %d,%d %d×%d (ok %v) around a 40×40 square at rows 60–100", x, y, w, h, ok)
	}
	// an object across the frame's bottom, seen on this frame: the crop takes it in, over half
	// the frame: whole frame
	sim.g.SeenArea(sim.f.PTS, 0, 100, 320, 180)
	if x, y, w, h, ok := sim.g.Crop(sim.f); ok {
		t.Fatalf("crop %d,%d %d×%d over half the frame", x, y, w, h)
	}
	s.Crop = false
	off := newSim(t, s, clip{gop: time.Second, moving: func(time.Duration) bool { return true }})
	off.run(0, time.Second)
	if _, _, _, _, ok := off.g.Crop(off.f); ok {
		t.Fatal("crop off: cropped")
	}
}
