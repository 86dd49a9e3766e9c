package analytics

import "github.com/vinfer/vinfer/event"

// lineRT is a line's runtime: its pixel geometry and counts.
type lineRT struct {
	p1, p2 vec
	length float64
	margin float64 // pixels
	counts classCounts
}

// lineTrack is one track's state on one line.
type lineTrack struct {
	side int8  // confirmed side: +1 right of p1→p2, −1 left, 0 not yet known
	hit  bool  // the pending move passes through the segment
	run  int32 // consecutive frames beyond the margin on the other side
	ref  vec   // last anchor position beyond the margin on the confirmed side
}

// observeLines updates track t (in slot, seen on the current frame) on every line whose class
// filter it passes.
//
// The anchor's side is +1 or −1 only when it is farther than the margin from the line (its
// infinite extension); in between, nothing changes. A track's first side is taken without an
// event. A move to the other side counts after inertia consecutive frames there, and emits
// line.cross only if the path from the last position on the old side to the first on the new
// one goes through the segment; either way the new side becomes the confirmed one.
func (a *Analyzer) observeLines(dst []event.Event, slot int32, t *track) []event.Event {
	nl := len(a.lines)
	for l := range a.lines {
		d, r := &a.cur.lines[l], &a.lines[l]
		if r.length == 0 || !allowed(d.src.Classes, t) {
			continue
		}
		p := anchor(t.box, d.fx, d.fy)
		dist := cross(r.p2.sub(r.p1), p.sub(r.p1)) / r.length
		var side int8
		switch {
		case dist > r.margin:
			side = 1
		case dist < -r.margin:
			side = -1
		default:
			continue
		}
		s := &a.lst[int(slot)*nl+l]
		switch {
		case s.side == 0:
			s.side, s.ref = side, p
		case side == s.side:
			s.ref, s.run = p, 0
		default:
			if s.run == 0 {
				s.hit = intersects(s.ref, p, r.p1, r.p2)
			}
			s.run++
			if s.run < d.inertia {
				continue
			}
			s.side, s.ref, s.run = side, p, 0
			if !s.hit {
				continue
			}
			dir := event.In
			if side < 0 {
				dir = event.Out
			}
			cls := r.counts.index(t.kind())
			r.counts.totals[cls][dir-1]++
			dst = a.emit(dst, event.LineCross, t)
			dst[len(dst)-1].Line, dst[len(dst)-1].Direction = d.src.Name, dir
		}
	}
	return dst
}
