package app

import (
	"slices"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
	"sync"
	"sync/atomic"

	"github.com/vinfer/vinfer/sink"
)

// Fanout is a sink that encodes each result once and offers it to every subscriber without
// blocking: a subscriber whose buffer is full misses the message (counted in Dropped).
type Fanout struct {
	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	buf     []byte
	Dropped atomic.Int64
}

type subscriber struct {
	defs.Subscription
	ch chan []byte
}

func (s *subscriber) wants(ev *event.Event) bool {
	if !s.Events || s.Stream != "" && s.Stream != ev.Stream {
		return false
	}
	return len(s.Types) == 0 || slices.Contains(s.Types, ev.Type.String())
}

func (f *Fanout) offer(s *subscriber, msg []byte) {
	select {
	case s.ch <- msg:
	default:
		f.Dropped.Add(1)
	}
}

func newFanout() *Fanout { return &Fanout{subs: map[*subscriber]struct{}{}} }

// Write implements sink.Sink.
func (f *Fanout) Write(r *sink.Result) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.subs) == 0 {
		return nil
	}
	f.buf = sink.AppendJSON(f.buf[:0], r)
	var msg []byte
	for s := range f.subs {
		if s.Events {
			for i := range r.Events {
				if s.wants(&r.Events[i]) {
					f.offer(s, r.Events[i].AppendJSON(nil))
				}
			}
			continue
		}
		if s.Stream != "" && s.Stream != r.Stream {
			continue
		}
		if msg == nil {
			msg = append([]byte(nil), f.buf...)
		}
		f.offer(s, msg)
	}
	return nil
}

func (f *Fanout) subscribe(sub defs.Subscription) (<-chan []byte, func()) {
	s := &subscriber{Subscription: sub, ch: make(chan []byte, 64)}
	f.mu.Lock()
	f.subs[s] = struct{}{}
	f.mu.Unlock()
	var once sync.Once
	return s.ch, func() {
		once.Do(func() {
			f.mu.Lock()
			delete(f.subs, s)
			f.mu.Unlock()
		})
	}
}
