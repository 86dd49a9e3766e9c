// Package liveview sends each stream's own coded video (H.264/H.265 access units, never decoded
// or re-encoded) to browsers over WebRTC, with the stream's results beside it on a data channel,
// stamped with the frame's PTS (docs/live-view.md). The pipeline hands every access unit to the
// stream's Feed once; the Feed fans it out to the viewers, each through a bounded queue.
package liveview

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
)

// ErrSlow ends a viewer whose queue was full: it could not keep up with the stream.
var ErrSlow = errors.New("viewer too slow: its queue of access units was full")

// ErrEnded ends the viewers of a stream that ended or was removed.
var ErrEnded = errors.New("stream ended")

// Unit is one access unit as viewers get it: Data is shared by every viewer, read-only.
type Unit struct {
	Codec    media.Codec
	Data     []byte // Annex-B
	PTS, DTS time.Duration
	Key      bool
}

// Hub holds every stream's Feed. The zero value is not usable: use NewHub.
type Hub struct {
	maxViewers, queue int

	mu    sync.Mutex
	feeds map[string]*Feed

	slow, refused atomic.Int64
}

// NewHub returns a hub allowing maxViewers viewers per stream, each with a queue of queue
// access units (both ≥ 1).
func NewHub(maxViewers, queue int) *Hub {
	return &Hub{maxViewers: max(maxViewers, 1), queue: max(queue, 1), feeds: map[string]*Feed{}}
}

// Feed returns stream id's feed, made running (pipeline.AUObserver: give it to the stream
// before it starts). A stream added again after its removal gets a new feed.
func (h *Hub) Feed(id string) *Feed {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.feeds[id]; f != nil && !f.isEnded() {
		return f
	}
	f := &Feed{hub: h, viewers: map[*Viewer]struct{}{}}
	h.feeds[id] = f
	return f
}

// Remove ends stream id's feed and its viewers (the stream was removed).
func (h *Hub) Remove(id string) {
	h.mu.Lock()
	f := h.feeds[id]
	delete(h.feeds, id)
	h.mu.Unlock()
	if f != nil {
		f.EndOfStream()
	}
}

// Join adds a viewer of stream id; it gets access units from the next key frame on. Errors:
// defs.ErrLiveNotRunning (no feed, or its stream ended), defs.ErrLiveFull (max viewers).
func (h *Hub) Join(id string) (*Viewer, error) {
	h.mu.Lock()
	f := h.feeds[id]
	h.mu.Unlock()
	if f == nil {
		return nil, defs.ErrLiveNotRunning
	}
	return f.join()
}

// Codec returns the codec of stream id's last access unit (CodecUnknown before the first).
func (h *Hub) Codec(id string) media.Codec {
	h.mu.Lock()
	f := h.feeds[id]
	h.mu.Unlock()
	if f == nil {
		return media.CodecUnknown
	}
	return media.Codec(f.codec.Load())
}

// Reorders reports whether stream id has B-frames (a PTS that went back).
func (h *Hub) Reorders(id string) bool {
	h.mu.Lock()
	f := h.feeds[id]
	h.mu.Unlock()
	return f != nil && f.reorders.Load()
}

// Stats returns the viewers now and the counters (Sessions is the server's).
func (h *Hub) Stats() defs.LiveStats {
	h.mu.Lock()
	n := 0
	for _, f := range h.feeds {
		f.mu.Lock()
		n += len(f.viewers)
		f.mu.Unlock()
	}
	h.mu.Unlock()
	return defs.LiveStats{Viewers: n, Slow: h.slow.Load(), Refused: h.refused.Load()}
}

// Feed is one stream's packet feed: the pipeline's access units to its viewers.
type Feed struct {
	hub      *Hub
	codec    atomic.Uint32
	reorders atomic.Bool // a PTS went back: B-frames (pictures sent out of presentation order)
	lastPTS  time.Duration
	mu       sync.Mutex
	viewers  map[*Viewer]struct{}
	ended    bool
}

func (f *Feed) isEnded() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ended
}

func (f *Feed) join() (*Viewer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ended {
		return nil, defs.ErrLiveNotRunning
	}
	if len(f.viewers) >= f.hub.maxViewers {
		f.hub.refused.Add(1)
		return nil, defs.ErrLiveFull
	}
	v := &Viewer{feed: f, ch: make(chan Unit, f.hub.queue), done: make(chan struct{})}
	f.viewers[v] = struct{}{}
	return v, nil
}

// ObserveAccessUnit offers au to every viewer without blocking (pipeline.AUObserver): the data
// is copied once, only while someone watches; a viewer whose queue is full is dropped (ErrSlow).
func (f *Feed) ObserveAccessUnit(au *media.AccessUnit) {
	f.codec.Store(uint32(au.Codec))
	f.mu.Lock()
	defer f.mu.Unlock()
	if au.PTS < f.lastPTS && !au.Key {
		f.reorders.Store(true)
	}
	f.lastPTS = au.PTS
	if len(f.viewers) == 0 {
		return
	}
	var u *Unit
	for v := range f.viewers {
		if !v.started {
			if !au.Key {
				continue
			}
			v.started = true
		}
		if u == nil {
			u = &Unit{Codec: au.Codec, Data: append([]byte(nil), au.Data...), PTS: au.PTS, DTS: au.DTS, Key: au.Key}
		}
		select {
		case v.ch <- *u:
		default:
			f.hub.slow.Add(1)
			f.dropLocked(v, ErrSlow)
		}
	}
}

// EndOfStream ends every viewer (ErrEnded) and refuses new ones (pipeline.AUObserver).
func (f *Feed) EndOfStream() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ended = true
	for v := range f.viewers {
		f.dropLocked(v, ErrEnded)
	}
}

func (f *Feed) dropLocked(v *Viewer, why error) {
	if _, ok := f.viewers[v]; !ok {
		return
	}
	delete(f.viewers, v)
	v.err = why
	close(v.done)
}

// Viewer is one viewer's queue of access units.
type Viewer struct {
	feed    *Feed
	ch      chan Unit
	done    chan struct{}
	err     error // set before done closes
	started bool  // under feed.mu: a key frame was queued
}

// Next returns the next access unit, or the reason the viewer ended (ErrSlow, ErrEnded,
// ErrLeft) once done; stop ends the wait with ErrLeft.
func (v *Viewer) Next(stop <-chan struct{}) (Unit, error) {
	select {
	case u := <-v.ch:
		return u, nil
	case <-v.done:
		return Unit{}, v.err
	case <-stop:
		v.Leave()
		return Unit{}, ErrLeft
	}
}

// ErrLeft: the viewer left.
var ErrLeft = errors.New("viewer left")

// Leave removes the viewer from its feed (idempotent).
func (v *Viewer) Leave() {
	v.feed.mu.Lock()
	defer v.feed.mu.Unlock()
	v.feed.dropLocked(v, ErrLeft)
}
