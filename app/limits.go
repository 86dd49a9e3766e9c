package app

import (
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/model"
)

// limits bound what adding streams may hold: sources being opened at once, streams running
// or being added, the time one open may take, and the directories remote declarations may read.
type limits struct {
	opening    chan struct{}
	maxStreams int
	timeout    time.Duration
	roots      []string

	mu   sync.Mutex
	held map[string]struct{} // ids of the streams added or being added
}

func newLimits(s *config.Sources, dir string) *limits {
	roots := s.Roots(dir, model.FindAssets())
	if roots == nil {
		roots = []string{} // not nil: nil would allow every path
	}
	return &limits{opening: make(chan struct{}, s.Opening()), maxStreams: s.Streams(),
		timeout: s.Timeout(), roots: roots, held: map[string]struct{}{}}
}

// admit reserves one of max_streams places for id and takes an opening slot, in one step, so
// that adds racing each other cannot all pass the count before any of them runs. release
// gives the opening slot back once the source is open (or failed); drop(id) gives the place
// back when the add failed or the stream was removed. It never waits: a full server answers
// defs.ErrStreamLimit or defs.ErrBusy at once, an id already held defs.ErrStreamExists.
func (l *limits) admit(id string) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.held[id]; ok {
		return nil, defs.ErrStreamExists
	}
	if len(l.held) >= l.maxStreams {
		return nil, defs.ErrStreamLimit
	}
	select {
	case l.opening <- struct{}{}:
	default:
		return nil, defs.ErrBusy
	}
	l.held[id] = struct{}{}
	return func() { <-l.opening }, nil
}

// drop gives id's place back.
func (l *limits) drop(id string) {
	l.mu.Lock()
	delete(l.held, id)
	l.mu.Unlock()
}
