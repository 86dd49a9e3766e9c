package app

import (
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/model"
)

// limits bound what adding streams may hold: sources being opened at once, streams running,
// the time one open may take, and the directories remote declarations may read.
type limits struct {
	opening    chan struct{}
	maxStreams int
	timeout    time.Duration
	roots      []string
}

func newLimits(s *config.Sources, dir string) limits {
	roots := s.Roots(dir, model.FindAssets())
	if roots == nil {
		roots = []string{} // not nil: nil would allow every path
	}
	return limits{opening: make(chan struct{}, s.Opening()), maxStreams: s.Streams(),
		timeout: s.Timeout(), roots: roots}
}

// admit takes an opening slot for a new stream when fewer than maxStreams run; release gives
// the slot back once the source is open (or failed). It never waits: a full server answers
// defs.ErrBusy or defs.ErrStreamLimit at once.
func (l *limits) admit(running int) (release func(), err error) {
	if running >= l.maxStreams {
		return nil, defs.ErrStreamLimit
	}
	select {
	case l.opening <- struct{}{}:
		return func() { <-l.opening }, nil
	default:
		return nil, defs.ErrBusy
	}
}
