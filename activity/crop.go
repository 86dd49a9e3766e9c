package activity

import (
	"time"

	"github.com/vinfer/vinfer/frame"
)

// Crop bounds (docs/activity.md, crop: motion).
const (
	// cropMaxShare: a crop over this share of the frame's area is not worth it: full frame.
	cropMaxShare = 0.5
	// cropMinMargin is the least margin around the regions, in frame pixels; the margin is
	// otherwise a quarter of the regions' larger side (a motion region covers only the moving
	// part of an object).
	cropMinMargin = 48
	// cropMinDiv: a crop is at least 1/cropMinDiv of the frame per axis (a small crop blown up
	// to the model's input shows objects far larger than the model was trained on).
	cropMinDiv = 3
)

// SeenArea widens the area of the objects that keep the stream active, in frame pixels
// [x0,x1)×[y0,y1), seen on the inferred frame at pts: a crop keeps it until pts + Hold.
func (g *Gate) SeenArea(pts time.Duration, x0, y0, x1, y1 int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case pts > g.areaPTS: // a newer frame: its objects replace the older ones'
		g.area, g.areaPTS = [4]int{x0, y0, x1, y1}, pts
	case pts == g.areaPTS:
		g.area = union(g.area, [4]int{x0, y0, x1, y1})
	default:
		return
	}
	g.areaUntil = pts + g.s.Hold
}

// Crop returns the rectangle of f (x, y, w, h in pixels) the detector sees instead of the
// whole frame, for a frame Frame just decided to infer: the union of its motion regions and
// the live objects' area, with a margin. ok is false for the whole frame: crop off, nothing
// to crop to (a refresh), or a crop over half the frame. The stream calls CropUsed when it
// inferred the crop.
func (g *Gate) Crop(f *frame.Frame) (x, y, w, h int, ok bool) {
	if !g.s.Crop || f.Width <= 0 || f.Height <= 0 {
		return 0, 0, 0, 0, false
	}
	g.mu.Lock()
	var r [4]int
	have := false
	for _, b := range g.boxes {
		r, have = pick(r, [4]int{b.X0, b.Y0, b.X1, b.Y1}, have), true
	}
	if f.PTS <= g.areaUntil {
		r, have = pick(r, g.area, have), true
	}
	g.mu.Unlock()
	if !have {
		return 0, 0, 0, 0, false
	}
	m := max(cropMinMargin, max(r[2]-r[0], r[3]-r[1])/4)
	r = [4]int{r[0] - m, r[1] - m, r[2] + m, r[3] + m}
	r[0], r[2] = grow(r[0], r[2], f.Width/cropMinDiv, f.Width)
	r[1], r[3] = grow(r[1], r[3], f.Height/cropMinDiv, f.Height)
	w, h = r[2]-r[0], r[3]-r[1]
	if float64(w)*float64(h) > cropMaxShare*float64(f.Width)*float64(f.Height) {
		return 0, 0, 0, 0, false
	}
	return r[0], r[1], w, h, true
}

// CropUsed counts a frame inferred on its crop (Snapshot's Cropped).
func (g *Gate) CropUsed() { g.cropped.Add(1) }

func pick(r, b [4]int, have bool) [4]int {
	if !have {
		return b
	}
	return union(r, b)
}

func union(a, b [4]int) [4]int {
	return [4]int{min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])}
}

// grow clips [lo,hi) to [0,size) and widens it about its centre to at least least pixels.
func grow(lo, hi, least, size int) (int, int) {
	lo, hi = max(lo, 0), min(hi, size)
	if hi-lo < least {
		c := (lo + hi) / 2
		lo = max(0, c-least/2)
		hi = min(size, lo+least)
		lo = max(0, hi-least)
	}
	return lo, hi
}
