package analytics

import (
	"time"

	"github.com/vinfer/vinfer/event"
)

// zoneRT is a zone's runtime: its pixel geometry and counts.
type zoneRT struct {
	span   [2]int // of poly in Analyzer.buf
	poly   []vec
	lo, hi vec // bounding box
	counts classCounts
}

// classCounts are per-class counts; classes grow as labels appear (the only allocation).
type classCounts struct {
	classes []string
	objects []int64     // zones: occupancy
	totals  [][3]uint64 // zones: enter, leave, loiter; lines: in, out
}

// index returns label's row, adding it when new.
func (c *classCounts) index(label string) int32 {
	for i, l := range c.classes {
		if l == label {
			return int32(i)
		}
	}
	c.classes = append(c.classes, label)
	c.objects = append(c.objects, 0)
	c.totals = append(c.totals, [3]uint64{})
	return int32(len(c.classes) - 1)
}

// zoneTrack is one track's state in one zone.
type zoneTrack struct {
	inside   bool
	loitered bool
	run      int32         // consecutive frames seen on the other side of inside
	cls      int32         // counts row while inside
	runStart time.Duration // PTS of the run's first frame
	enter    time.Duration // PTS the visit began (its inertia run's first frame)
}

// allowed reports whether t's label or group passes a class filter (empty: all).
func allowed(classes []string, t *track) bool {
	if len(classes) == 0 {
		return true
	}
	for _, c := range classes {
		if c == t.label || (t.group != "" && c == t.group) {
			return true
		}
	}
	return false
}

// kind is the class t counts under in the metrics: its group, or its label.
func (t *track) kind() string {
	if t.group != "" {
		return t.group
	}
	return t.label
}

// observeZones updates track t (in slot, seen on the current frame) in every zone. A track of a
// class the zone does not count is outside it.
func (a *Analyzer) observeZones(dst []event.Event, slot int32, t *track) []event.Event {
	nz := len(a.zones)
	pts := a.fr.pts
	for z := range a.zones {
		d, r := &a.cur.zones[z], &a.zones[z]
		s := &a.zst[int(slot)*nz+z]
		in := false
		if allowed(d.src.Classes, t) {
			p := anchor(t.box, d.fx, d.fy)
			in = p.x >= r.lo.x && p.x <= r.hi.x && p.y >= r.lo.y && p.y <= r.hi.y && inPolygon(r.poly, p)
		}
		if in == s.inside {
			s.run = 0
		} else {
			if s.run == 0 {
				s.runStart = pts
			}
			s.run++
			if s.run >= d.inertia {
				s.run = 0
				if in {
					s.inside, s.loitered, s.enter = true, false, s.runStart
					s.cls = r.counts.index(t.kind())
					r.counts.objects[s.cls]++
					r.counts.totals[s.cls][0]++
					dst = a.emit(dst, event.ZoneEnter, t)
					dst[len(dst)-1].Zone = d.src.Name
				} else {
					dst = a.leave(dst, z, s, t, s.runStart)
				}
			}
		}
		if s.inside && d.loiter > 0 && !s.loitered && pts-s.enter >= d.loiter {
			s.loitered = true
			r.counts.totals[s.cls][2]++
			dst = a.emit(dst, event.ZoneLoiter, t)
			dst[len(dst)-1].Zone, dst[len(dst)-1].Dwell = d.src.Name, pts-s.enter
		}
	}
	return dst
}

// leave emits zone.leave for track t leaving zone z at PTS at (the dwell's end).
func (a *Analyzer) leave(dst []event.Event, z int, s *zoneTrack, t *track, at time.Duration) []event.Event {
	r := &a.zones[z]
	r.counts.objects[s.cls]--
	r.counts.totals[s.cls][1]++
	dwell := max(at-s.enter, 0)
	*s = zoneTrack{}
	dst = a.emit(dst, event.ZoneLeave, t)
	dst[len(dst)-1].Zone, dst[len(dst)-1].Dwell = a.cur.zones[z].src.Name, dwell
	return dst
}
