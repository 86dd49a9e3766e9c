package app

import (
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
	stream string // "" = all
	ch     chan []byte
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
		if s.stream != "" && s.stream != r.Stream {
			continue
		}
		if msg == nil {
			msg = append([]byte(nil), f.buf...)
		}
		select {
		case s.ch <- msg:
		default:
			f.Dropped.Add(1)
		}
	}
	return nil
}

func (f *Fanout) subscribe(stream string) (<-chan []byte, func()) {
	s := &subscriber{stream: stream, ch: make(chan []byte, 64)}
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
