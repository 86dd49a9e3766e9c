package evidence

import (
	"slices"
	"sync"

	"github.com/vinfer/vinfer/event"
)

// maxUnrecorded bounds the clips an unrecorded holds.
const maxUnrecorded = 4096

// unrecorded holds, in memory, the clips that ended without being written (a full disk, a
// full queue, an index error) whose record the index refused (ENOSPC when it must grow), so
// that the API shows their events' clip gone with the reason instead of pending forever. The
// writer records them again every minute and at Close (retry); those the index takes are
// forgotten. At most maxUnrecorded, the oldest forgotten first (then read pending again, as
// before; each refusal is counted under FailIndex). Safe for concurrent use.
type unrecorded struct {
	mu    sync.Mutex
	clips map[event.ID]*Clip
	order []event.ID // oldest first
}

// add keeps c (Gone set, no file) until the index records it.
func (u *unrecorded) add(c *Clip) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.clips == nil {
		u.clips = map[event.ID]*Clip{}
	}
	if _, ok := u.clips[c.ID]; !ok {
		u.order = append(u.order, c.ID)
	}
	u.clips[c.ID] = c
	for len(u.order) > maxUnrecorded {
		delete(u.clips, u.order[0])
		u.order = u.order[1:]
	}
}

// get returns the clip of that id held, or nil.
func (u *unrecorded) get(id event.ID) *Clip {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.clips[id]
}

// retry records the clips held through put, oldest first, and forgets those put takes; it
// stops at the first refusal (the disk is still full) and returns it.
func (u *unrecorded) retry(put func(*Clip) error) error {
	u.mu.Lock()
	pending := make([]*Clip, 0, len(u.order))
	for _, id := range u.order {
		pending = append(pending, u.clips[id])
	}
	u.mu.Unlock()
	for _, c := range pending {
		if err := put(c); err != nil {
			return err
		}
		u.mu.Lock()
		if u.clips[c.ID] == c {
			delete(u.clips, c.ID)
			if i := slices.Index(u.order, c.ID); i >= 0 {
				u.order = slices.Delete(u.order, i, i+1)
			}
		}
		u.mu.Unlock()
	}
	return nil
}

// clipRecord is the index record of c before it is written: its id, stream, wanted start and
// events.
func (r *Recorder) clipRecord(c *openClip) *Clip {
	rec := &Clip{ID: c.id, Stream: c.stream, Want: seconds(c.from), Created: r.Now().UTC(),
		Events: make([]event.ID, len(c.events))}
	for i := range c.events {
		rec.Events[i] = c.events[i].id
	}
	return rec
}

// unrecordable counts and logs the index's refusal to record rec (not written, Gone set) and
// keeps it for the API and a later retry.
func (r *Recorder) unrecordable(rec *Clip, err error) {
	r.failures.add(FailIndex, 1)
	r.Log.Error("evidence: index", "clip", rec.ID.String(), "err", err)
	r.unrec.add(rec)
}

// recordUnrecorded records the clips the index refused before, now that it may have room. Run
// by the writer (or after it ended).
func (r *Recorder) recordUnrecorded() {
	if err := r.unrec.retry(func(c *Clip) error { return r.idx.putClip(c, nil) }); err != nil {
		r.Log.Warn("evidence: index still refuses the record of clips not written", "err", err)
	}
}

// clipOf returns the clip record of a row: from the index (c), else one the index refused.
func (r *Recorder) clipOf(row *Row, c *Clip) *Clip {
	if c == nil {
		c = r.unrec.get(row.Clip)
	}
	return c
}
