package timestamp

import (
	"testing"
	"time"
)

// TestOrder converts a stream with B-frames (presentation order I0 P3 B1 B2 P6 B4 B5, 30 fps)
// whose timestamps jump by three hours: the two outliers are not shown, nor the access units
// after the jump up to the next key frame; from there on the new timeline comes after every
// time given before.
func TestOrder(t *testing.T) {
	c := &Clock{Rate: 90000}
	if err := c.Init(); err != nil {
		t.Fatal(err)
	}
	var o Order
	frame := uint32(3000)
	gop := []uint32{0, 3, 1, 2, 6, 4, 5} // presentation index in decoding order
	at := time.Unix(0, 0)
	var maxOld time.Duration // the largest shown on the old timeline
	const jump = 3 * 3600 * 90000
	for g := range 4 {
		for i, p := range gop {
			ts := (uint32(g*7)+p)*frame + 1000
			if g >= 2 || (g == 1 && i >= 4) {
				ts += jump
			}
			at = at.Add(time.Second / 30)
			pts, ev := c.Convert(ts, at)
			discard := o.Discard(c, ev, i == 0)
			want := ev == EventOutlier || (g == 1 && i >= 6)
			if discard != want {
				t.Errorf("gop %d unit %d (%v): discard %v, want %v", g, i, ev, discard, want)
			}
			switch {
			case discard:
			case g >= 2 && pts <= maxOld:
				t.Errorf("gop %d unit %d: PTS %v not after the old timeline's %v", g, i, pts, maxOld)
			case g < 2:
				maxOld = max(maxOld, pts)
			}
		}
	}
	if !c.Reordered() || c.Jumps() != 1 || c.Outliers() != 2 {
		t.Fatalf("reordered %v, %d jumps, %d outliers: want true, 1, 2", c.Reordered(), c.Jumps(), c.Outliers())
	}
}
