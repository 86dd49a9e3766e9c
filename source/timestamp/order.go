package timestamp

// Order decides which access units of a stream are decoded for reference only, never shown
// (media.AccessUnit.Discard), so that the decoded pictures' presentation times never go back:
//
//   - an outlier's, whose time is a guess from its arrival;
//   - with B-frames (Clock.Reordered), after a jump, every one up to the next key frame: the
//     pictures of the old timeline still in the decoder come out in picture order, interleaved
//     with those of the new one, whatever times the new one gets. From the key frame on, the
//     new timeline comes after everything shown (Clock places it so).
//
// The zero value is ready. Not safe for concurrent use.
type Order struct {
	hide bool // after a jump among B-frames, until a key frame
}

// Discard reports whether the access unit converted with event ev by c, a key frame or not,
// is to be decoded and not shown. Call it for every access unit delivered, in order.
func (o *Order) Discard(c *Clock, ev Event, key bool) bool {
	if ev == EventJump && c.Reordered() {
		o.hide = true
	}
	if key {
		o.hide = false
	}
	return ev == EventOutlier || o.hide
}
