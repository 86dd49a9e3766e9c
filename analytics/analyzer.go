package analytics

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/event"
)

// Object is one tracked object on a frame.
type Object struct {
	// TrackID is the tracker's id, stable for the object's life in the stream.
	TrackID int64
	// ClassID is the class index; Label its name, which class filters match.
	ClassID int
	Label   string
	// Group is the name of the class group Label belongs to (package objects), "" for none:
	// class filters match it too, and the object counts under it in the metrics.
	Group string
	// Score is the detection confidence, 0…1.
	Score float32
	// Box is [x1,y1,x2,y2] in frame pixels.
	Box [4]float32
}

// Frame is one inferred frame's tracked objects.
type Frame struct {
	// Index is the frame's index in the stream; PTS its presentation time.
	Index int64
	PTS   time.Duration
	// Time is the frame's wall-clock time; zero: Options.Now().
	Time time.Time
	// Width and Height are the frame's size in pixels; normalized shapes scale to it.
	Width, Height int
	// Objects are the tracks seen on this frame. A track id listed twice counts once.
	Objects []Object
	// Ended lists tracks the tracker removed: they end now rather than after the retention.
	Ended []int64
}

// Options configure an Analyzer.
type Options struct {
	// Stream is the stream id put in events.
	Stream string
	// IDs makes event ids; nil: event.NewID's process-wide generator.
	IDs *event.Generator
	// Now gives the wall-clock time of frames without one; nil: time.Now.
	Now func() time.Time
}

// Analyzer turns one stream's tracked objects into events. Process is called by one goroutine
// per stream, frame after frame; Store, Set, Metrics and Occupancy may be called from any
// goroutine at any time.
//
// In steady state (no new class names in a zone or line, track and event counts within what
// was seen before) Process allocates nothing.
type Analyzer struct {
	opts Options
	next atomic.Pointer[Set]

	mu  sync.Mutex // guards everything below
	cur *Set
	// geometry placed in pixels for size w×h of cur
	placed bool
	w, h   int
	buf    []vec
	zones  []zoneRT
	lines  []lineRT
	// tracks: slots, with order the used slots sorted by track id
	tracks []track
	free   []int32
	order  []int32
	ids    []int64     // ids[i] = tracks[order[i]].id, searched without indirection
	zst    []zoneTrack // slot·len(zones) + zone
	lst    []lineTrack // slot·len(lines) + line
	// current and last frame
	fr, last frameRef
	started  bool
}

type frameRef struct {
	index int64
	pts   time.Duration
	wall  time.Time
}

// track is one track's last observation.
type track struct {
	id       int64
	classID  int
	label    string
	group    string
	score    float32
	box      [4]float32
	lastSeen time.Duration
	seen     bool // on the current frame
}

var emptySet = &Set{retention: DefaultRetention}

// New returns an Analyzer for one stream with declarations s (nil: none).
func New(o Options, s *Set) *Analyzer {
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &Analyzer{opts: o, cur: emptySet}
	a.Store(s)
	return a
}

// Store swaps the declarations; the next Process applies them before its frame. Zones and lines
// whose declaration is unchanged (same name and fields) keep their state and counts; a changed
// one starts afresh as a new one (counts at 0, tracks inside it enter again, no zone.leave for
// the old one); a removed one disappears with its counts. s nil: none.
func (a *Analyzer) Store(s *Set) {
	if s == nil {
		s = emptySet
	}
	a.next.Store(s)
}

// Set returns the declarations last stored.
func (a *Analyzer) Set() *Set { return a.next.Load() }

// Process analyzes one frame, appends its events to dst and returns it. Events come in a fixed
// order: per object (in f.Objects order) track.start, then its zones' events, then its lines',
// in declaration order; then the tracks that end, by track id. A PTS lower than the previous
// frame's (a new timeline) first ends every track as of the previous frame.
func (a *Analyzer) Process(dst []event.Event, f *Frame) []event.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.next.Load(); s != a.cur {
		a.apply(s)
	}
	if !a.placed || f.Width != a.w || f.Height != a.h {
		a.place(f.Width, f.Height)
	}
	if a.started && f.PTS < a.last.pts {
		a.fr = a.last
		dst = a.endAll(dst)
	}
	a.fr = frameRef{index: f.Index, pts: f.PTS, wall: f.Time}
	if a.fr.wall.IsZero() {
		a.fr.wall = a.opts.Now()
	}
	for _, s := range a.order {
		a.tracks[s].seen = false
	}
	for i := range f.Objects {
		o := &f.Objects[i]
		slot, isNew := a.lookup(o.TrackID)
		t := &a.tracks[slot]
		if t.seen {
			continue
		}
		*t = track{id: o.TrackID, classID: o.ClassID, label: o.Label, group: o.Group, score: o.Score, box: o.Box, lastSeen: f.PTS, seen: true}
		if isNew && a.cur.trackEvents {
			dst = a.emit(dst, event.TrackStart, t)
		}
		dst = a.observeZones(dst, slot, t)
		dst = a.observeLines(dst, slot, t)
	}
	for _, id := range f.Ended {
		if i, ok := a.find(id); ok && !a.tracks[a.order[i]].seen {
			dst = a.end(dst, a.order[i])
			a.order = append(a.order[:i], a.order[i+1:]...)
			a.ids = append(a.ids[:i], a.ids[i+1:]...)
		}
	}
	// Tracks unseen for longer than the retention end.
	n := 0
	for i, s := range a.order {
		t := &a.tracks[s]
		if !t.seen && f.PTS-t.lastSeen > a.cur.retention {
			dst = a.end(dst, s)
			continue
		}
		a.order[n], a.ids[n] = s, a.ids[i]
		n++
	}
	a.order, a.ids = a.order[:n], a.ids[:n]
	a.last, a.started = a.fr, true
	return dst
}

// Flush ends every track as of the last processed frame (zone.leave where inside, track.end)
// and appends the events to dst: call it when the stream ends.
func (a *Analyzer) Flush(dst []event.Event) []event.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fr = a.last
	return a.endAll(dst)
}

// endAll ends every track, by track id.
func (a *Analyzer) endAll(dst []event.Event) []event.Event {
	for _, s := range a.order {
		dst = a.end(dst, s)
	}
	a.order, a.ids = a.order[:0], a.ids[:0]
	return dst
}

// end emits the events of the track in slot ending and frees the slot; the caller removes it
// from order.
func (a *Analyzer) end(dst []event.Event, slot int32) []event.Event {
	t := &a.tracks[slot]
	nz := len(a.zones)
	for z := range a.zones {
		s := &a.zst[int(slot)*nz+z]
		if s.inside {
			dst = a.leave(dst, z, s, t, t.lastSeen)
		}
	}
	if a.cur.trackEvents {
		dst = a.emit(dst, event.TrackEnd, t)
	}
	clear(a.zst[int(slot)*nz : int(slot+1)*nz])
	nl := len(a.lines)
	clear(a.lst[int(slot)*nl : int(slot+1)*nl])
	*t = track{}
	a.free = append(a.free, slot)
	return dst
}

// find returns the index in order where track id is or would be inserted, and whether it is
// there.
func (a *Analyzer) find(id int64) (int, bool) {
	ids := a.ids
	lo, hi := 0, len(ids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ids[m] < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo, lo < len(ids) && ids[lo] == id
}

// lookup returns the slot of track id, creating the track when absent (isNew).
func (a *Analyzer) lookup(id int64) (slot int32, isNew bool) {
	i, ok := a.find(id)
	if ok {
		return a.order[i], false
	}
	if n := len(a.free); n > 0 {
		slot = a.free[n-1]
		a.free = a.free[:n-1]
	} else {
		slot = int32(len(a.tracks))
		a.tracks = append(a.tracks, track{})
		for range a.zones {
			a.zst = append(a.zst, zoneTrack{})
		}
		for range a.lines {
			a.lst = append(a.lst, lineTrack{})
		}
	}
	a.tracks[slot].id = id
	a.order = append(a.order, 0)
	copy(a.order[i+1:], a.order[i:])
	a.order[i] = slot
	a.ids = append(a.ids, 0)
	copy(a.ids[i+1:], a.ids[i:])
	a.ids[i] = id
	return slot, true
}

// emit appends an event of type ty about t on the current frame.
func (a *Analyzer) emit(dst []event.Event, ty event.Type, t *track) []event.Event {
	var id event.ID
	if a.opts.IDs != nil {
		id = a.opts.IDs.New(a.fr.wall)
	} else {
		id = event.NewID(a.fr.wall)
	}
	return append(dst, event.Event{
		ID: id, Type: ty, Stream: a.opts.Stream, Frame: a.fr.index, PTS: a.fr.pts, Time: a.fr.wall,
		TrackID: t.id, ClassID: t.classID, Label: t.label, Group: t.group, Score: t.score, Box: t.box,
	})
}

// anchor returns the point at fractions fx, fy of box b.
func anchor(b [4]float32, fx, fy float64) vec {
	x1, y1, x2, y2 := float64(b[0]), float64(b[1]), float64(b[2]), float64(b[3])
	return vec{x1 + fx*(x2-x1), y1 + fy*(y2-y1)}
}

// place computes the pixel geometry of the current set for frames of w×h.
func (a *Analyzer) place(w, h int) {
	a.placed, a.w, a.h = true, w, h
	a.buf = a.buf[:0]
	scale := func(p Point, normalized bool) vec {
		if normalized {
			return vec{p[0] * float64(w), p[1] * float64(h)}
		}
		return vec{p[0], p[1]}
	}
	for i := range a.zones {
		z := a.cur.zones[i].src
		start := len(a.buf)
		for _, p := range z.Polygon {
			a.buf = append(a.buf, scale(p, z.Normalized))
		}
		a.zones[i].span = [2]int{start, len(a.buf)}
	}
	for i := range a.zones {
		r := &a.zones[i]
		r.poly = a.buf[r.span[0]:r.span[1]:r.span[1]]
		r.lo, r.hi = vec{math.Inf(1), math.Inf(1)}, vec{math.Inf(-1), math.Inf(-1)}
		for _, p := range r.poly {
			r.lo = vec{min(r.lo.x, p.x), min(r.lo.y, p.y)}
			r.hi = vec{max(r.hi.x, p.x), max(r.hi.y, p.y)}
		}
	}
	diag := math.Hypot(float64(w), float64(h))
	for i := range a.lines {
		l := a.cur.lines[i].src
		r := &a.lines[i]
		r.p1, r.p2 = scale(l.Points[0], l.Normalized), scale(l.Points[1], l.Normalized)
		r.length = math.Hypot(r.p2.x-r.p1.x, r.p2.y-r.p1.y)
		if l.Margin != nil {
			r.margin = *l.Margin
		} else {
			r.margin = DefaultMargin * diag
		}
	}
}

// apply switches to set s, carrying over the state of unchanged zones and lines.
func (a *Analyzer) apply(s *Set) {
	oldZones, oldLines, oldZst, oldLst := a.zones, a.lines, a.zst, a.lst
	onz, onl := len(oldZones), len(oldLines)
	zones := make([]zoneRT, len(s.zones))
	zfrom := make([]int, len(s.zones))
	for i := range s.zones {
		zfrom[i] = -1
		for j := range oldZones {
			if sameZone(s.zones[i].src, a.cur.zones[j].src) {
				zones[i], zfrom[i] = oldZones[j], j
				break
			}
		}
	}
	lines := make([]lineRT, len(s.lines))
	lfrom := make([]int, len(s.lines))
	for i := range s.lines {
		lfrom[i] = -1
		for j := range oldLines {
			if sameLine(s.lines[i].src, a.cur.lines[j].src) {
				lines[i], lfrom[i] = oldLines[j], j
				break
			}
		}
	}
	nz, nl := len(zones), len(lines)
	a.zst = make([]zoneTrack, len(a.tracks)*nz)
	a.lst = make([]lineTrack, len(a.tracks)*nl)
	for slot := range a.tracks {
		for i, j := range zfrom {
			if j >= 0 {
				a.zst[slot*nz+i] = oldZst[slot*onz+j]
			}
		}
		for i, j := range lfrom {
			if j >= 0 {
				a.lst[slot*nl+i] = oldLst[slot*onl+j]
			}
		}
	}
	a.cur, a.zones, a.lines, a.placed = s, zones, lines, false
}
