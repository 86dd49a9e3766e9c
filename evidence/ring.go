package evidence

import (
	"sync"
	"time"

	"github.com/vinfer/vinfer/media"
)

// DefaultRingBytes is Ring.MaxBytes when 0: the most coded bytes one stream's buffer holds.
const DefaultRingBytes = 32 << 20

// Ring is one stream's buffer of its source's own access units (no re-encoding), in decode
// order, starting at a key frame: whole GOPs are dropped from the front once the next GOP
// still reaches back Pre before the newest unit and Back before the latest Processed PTS,
// unless a pending clip pins them. The bytes live in one arena that grows up to MaxBytes and is
// then reused, so a stream in steady state allocates nothing; only when a unit does not fit in
// an arena at its bound do the oldest GOPs go even so (counted as overruns; a clip then starts
// later and says so). Observe runs on the stream's goroutine, the rest anywhere.
type Ring struct {
	// Pre is how far back before the newest unit the buffer reaches (at least).
	Pre time.Duration
	// Back is how far back before the latest Processed PTS it reaches (at least): the results
	// an event comes with run behind the source by the pipeline's latency.
	Back time.Duration
	// MaxBytes bounds the arena (default DefaultRingBytes).
	MaxBytes int

	mu     sync.Mutex
	arena  []byte
	wr     int     // next write offset in arena
	ents   []entry // live units are ents[head:]
	head   int
	keys   int  // key frames among the live units
	pinned bool // a clip is open: keep units from pin on
	pin    time.Duration
	newest time.Duration
	ended  bool
	// done is the latest Processed PTS of this timeline, when hasDone.
	done    time.Duration
	hasDone bool

	stats RingStats

	// onUnit runs under mu after each unit is stored (clip completion), onProcessed after
	// each Processed.
	onUnit      func(r *Ring, au *entry)
	onProcessed func(r *Ring)
}

// RingStats counts what a Ring did.
type RingStats struct {
	// Bytes and Units buffered now; Capacity is the arena's size in bytes.
	Bytes, Units, Capacity int64
	// Span is the PTS from the oldest buffered unit to the newest.
	Span time.Duration
	// Observed counts units seen, Skipped those dropped while waiting for a key frame,
	// Overrun GOPs dropped from an arena at MaxBytes that Pre, Back or a clip still wanted,
	// Resets timeline restarts.
	Observed, Skipped, Overrun, Resets int64
}

// entry is one buffered access unit; its bytes are arena[off:off+size].
type entry struct {
	off, size int
	codec     media.Codec
	pts, dts  time.Duration
	key       bool
	wall      time.Time
}

// Unit is an access unit copied out of a Ring; Data is the caller's.
type Unit struct {
	Codec    media.Codec
	Data     []byte
	PTS, DTS time.Duration
	Key      bool
}

// ObserveAccessUnit copies au into the ring (pipeline.AUObserver). Units before the first key
// frame are skipped; a PTS going back (a file looping) or a discontinuity restarts the buffer.
func (r *Ring) ObserveAccessUnit(au *media.AccessUnit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stats.Observed++
	if r.ended {
		r.ended = false
	}
	n := len(r.ents) - r.head
	if n > 0 && (au.Discontinuity || au.PTS+time.Second < r.newest) {
		r.restart()
		n = 0
	}
	if n == 0 && !au.Key {
		r.stats.Skipped++
		return
	}
	if r.MaxBytes <= 0 {
		r.MaxBytes = DefaultRingBytes
	}
	if len(au.Data) > r.MaxBytes/2 { // one unit may not take the whole buffer
		r.stats.Skipped++
		r.restart()
		return
	}
	off, ok := r.place(len(au.Data))
	for !ok { // grow to the bound first; then drop the oldest GOP (the ring is empty at the latest)
		if len(r.arena) < r.MaxBytes {
			r.grow(len(au.Data))
		} else {
			r.dropGOP(true)
		}
		off, ok = r.place(len(au.Data))
	}
	copy(r.arena[off:], au.Data)
	r.wr = off + len(au.Data)
	r.compact()
	r.ents = append(r.ents, entry{off: off, size: len(au.Data), codec: au.Codec, pts: au.PTS, dts: au.DTS,
		key: au.Key, wall: au.Wallclock})
	if au.Key {
		r.keys++
	}
	if au.PTS > r.newest || n == 0 {
		r.newest = au.PTS
	}
	r.trim()
	if r.onUnit != nil {
		r.onUnit(r, &r.ents[len(r.ents)-1])
	}
}

// Processed tells the ring that the pipeline delivered its result for the frame at pts: events
// still to come are at or after it, so the ring keeps from the key frame at or before pts − Back.
// A pts past the newest unit (a result of the timeline before a restart) is ignored.
func (r *Ring) Processed(pts time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ents) == r.head || pts > r.newest {
		return
	}
	r.done, r.hasDone = pts, true
	if r.onProcessed != nil {
		r.onProcessed(r)
	}
}

// EndOfStream marks the source's end: clips waiting for later units complete now.
func (r *Ring) EndOfStream() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ended = true
	if r.onUnit != nil {
		r.onUnit(r, nil)
	}
}

// restart drops every unit (timeline restart) after an open clip took its units.
func (r *Ring) restart() {
	if r.onUnit != nil { // an open clip completes with the units of the old timeline
		r.onUnit(r, nil)
	}
	r.ents, r.head, r.keys, r.wr = r.ents[:0], 0, 0, 0
	r.hasDone = false
	r.stats.Resets++
}

// place finds room for size bytes in the arena after the live region, wrapping to its start.
func (r *Ring) place(size int) (int, bool) {
	if len(r.ents) == r.head {
		r.wr = 0
		return 0, size <= len(r.arena)
	}
	first := r.ents[r.head].off
	if r.wr > first { // live region [first, wr): not wrapped
		if r.wr+size <= len(r.arena) {
			return r.wr, true
		}
		return 0, size < first
	}
	// wrapped: live [first, end) and [0, wr)
	return r.wr, r.wr+size < first
}

// grow enlarges the arena (below MaxBytes) towards it, moving the live units to its start.
func (r *Ring) grow(need int) {
	n := min(max(2*len(r.arena), 1<<20, 2*need), r.MaxBytes)
	a := make([]byte, n)
	wr := 0
	for i := r.head; i < len(r.ents); i++ {
		e := &r.ents[i]
		copy(a[wr:], r.arena[e.off:e.off+e.size])
		e.off = wr
		wr += e.size
	}
	r.arena, r.wr = a, wr
	r.stats.Capacity = int64(n)
}

// compact moves the live entries to the front of ents when half of it is dead, so append
// reuses its capacity.
func (r *Ring) compact() {
	if r.head > 0 && r.head >= len(r.ents)/2 && len(r.ents) == cap(r.ents) {
		n := copy(r.ents, r.ents[r.head:])
		r.ents, r.head = r.ents[:n], 0
	}
}

// trim drops the oldest GOP while the next one still starts Pre or more before the newest unit,
// Back or more before the latest processed PTS, and no pin needs it.
func (r *Ring) trim() {
	for r.keys > 1 {
		next := r.nextKey(r.head + 1)
		if next < 0 {
			return
		}
		bound := r.newest - r.Pre
		if r.hasDone {
			bound = min(bound, r.done-r.Back)
		}
		if r.pinned {
			bound = min(bound, r.pin)
		}
		if r.ents[next].pts > bound {
			return
		}
		r.dropGOP(false)
	}
}

// dropGOP drops the units up to the second key frame (all of them when there is one GOP);
// force (no room) counts an overrun: trim keeps only what Pre, Back or a pin want.
func (r *Ring) dropGOP(force bool) {
	if len(r.ents) == r.head {
		return
	}
	next := r.nextKey(r.head + 1)
	if next < 0 {
		next = len(r.ents)
	}
	if force {
		r.stats.Overrun++
	}
	for i := r.head; i < next; i++ {
		if r.ents[i].key {
			r.keys--
		}
	}
	r.head = next
	if r.head == len(r.ents) {
		r.ents, r.head, r.wr = r.ents[:0], 0, 0
	}
}

func (r *Ring) nextKey(from int) int {
	for i := from; i < len(r.ents); i++ {
		if r.ents[i].key {
			return i
		}
	}
	return -1
}

// Stats returns the ring's counters and occupancy.
func (r *Ring) Stats() RingStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.stats
	s.Units = int64(len(r.ents) - r.head)
	s.Capacity = int64(len(r.arena))
	for i := r.head; i < len(r.ents); i++ {
		s.Bytes += int64(r.ents[i].size)
	}
	if s.Units > 0 {
		s.Span = r.newest - r.ents[r.head].pts
	}
	return s
}

// copyRange copies the units from the last key frame at or before from (or, when the buffer
// does not reach back that far, its first key frame) through the last unit whose DTS is at or
// before to. start is the first unit's PTS; truncated reports a start later than from.
// Called with mu held.
func (r *Ring) copyRange(from, to time.Duration) (units []Unit, truncated bool) {
	start := -1
	for i := r.head; i < len(r.ents); i++ {
		e := &r.ents[i]
		if e.key && e.pts <= from {
			start = i
		} else if e.pts > from && start >= 0 {
			break
		}
	}
	if start < 0 {
		start, truncated = r.nextKey(r.head), true
		if start < 0 {
			return nil, true
		}
	}
	end, total := start, 0
	for end < len(r.ents) && r.ents[end].dts <= to {
		total += r.ents[end].size
		end++
	}
	buf := make([]byte, 0, total)
	units = make([]Unit, 0, end-start)
	for i := start; i < end; i++ {
		e := &r.ents[i]
		b0 := len(buf)
		buf = append(buf, r.arena[e.off:e.off+e.size]...)
		units = append(units, Unit{Codec: e.codec, Data: buf[b0:len(buf):len(buf)], PTS: e.pts, DTS: e.dts, Key: e.key})
	}
	return units, truncated
}

// Units copies the units from the key frame at or before from through DTS to (see copyRange).
func (r *Ring) Units(from, to time.Duration) ([]Unit, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.copyRange(from, to)
}
