package app

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/redact"
)

// errOpen marks an addStream error met while opening the source (the declaration was fine):
// StartStream tries such a stream again.
type errOpen struct{ err error }

func (e errOpen) Error() string { return e.err.Error() }
func (e errOpen) Unwrap() error { return e.err }

// failedStream is a configured stream that could not start: listed as failed with its reason,
// and, when its source failed to open, tried again with backoff (retry nil: the declaration
// itself is wrong, never retried).
type failedStream struct {
	decl    config.Stream
	err     error
	added   time.Time
	retry   *defs.Retry
	timer   *time.Timer
	removed bool // by RemoveStream: an attempt in flight removes what it started
}

// failedStreams are the streams StartStream could not start, in the order they failed.
type failedStreams struct {
	mu      sync.Mutex
	byID    map[string]*failedStream
	order   []string
	stopped bool
	flight  sync.WaitGroup // attempts running
}

// RetryError is StartStream's error for a source that could not be opened and is tried
// again In from now; Err is the attempt's error.
type RetryError struct {
	Err error
	In  time.Duration
}

func (e *RetryError) Error() string { return fmt.Sprintf("%v (retrying in %s)", e.Err, e.In) }
func (e *RetryError) Unwrap() error { return e.Err }

// StartStream is AddStream for a configured stream that must not vanish when it cannot start:
// a stream whose source cannot be opened (a port in use, a camera offline, a file missing)
// stays listed as failed, with its reason, and is tried again after sources.retry.initial,
// doubling up to sources.retry.max, until it opens or is removed; a declaration that is wrong
// is listed as failed and not retried. The error, when not nil, is the first attempt's.
func (a *App) StartStream(s config.Stream) error {
	err := a.addStream(s, nil, false)
	if err == nil || errors.Is(err, defs.ErrStreamExists) {
		return err
	}
	fs := &failedStream{decl: s, err: err, added: time.Now()}
	f := &a.failed
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.byID[s.ID]; dup || f.stopped {
		return err
	}
	if f.byID == nil {
		f.byID = map[string]*failedStream{}
	}
	f.byID[s.ID] = fs
	f.order = append(f.order, s.ID)
	if errors.As(err, new(errOpen)) {
		initial, most := a.Config.Sources.Backoff()
		fs.retry = &defs.Retry{Initial: initial, Max: most}
		a.scheduleRetry(fs)
		return &RetryError{Err: err, In: initial}
	}
	return err
}

// scheduleRetry arms fs's next attempt (f.mu held).
func (a *App) scheduleRetry(fs *failedStream) {
	r := fs.retry
	r.Attempts++
	d := r.Initial
	for i := 1; i < r.Attempts && d < r.Max; i++ {
		d *= 2
	}
	d = min(d, r.Max)
	r.Next = time.Now().Add(d)
	fs.timer = time.AfterFunc(d, func() { a.retryStream(fs) })
}

// retryStream is one attempt to start fs again.
func (a *App) retryStream(fs *failedStream) {
	f := &a.failed
	f.mu.Lock()
	if f.stopped || fs.removed {
		f.mu.Unlock()
		return
	}
	f.flight.Add(1)
	f.mu.Unlock()
	defer f.flight.Done()
	err := a.addStream(fs.decl, nil, true)
	f.mu.Lock()
	defer f.mu.Unlock()
	id := fs.decl.ID
	if err == nil {
		if fs.removed {
			_ = a.Pipeline.RemoveStream(id)
			return
		}
		f.drop(id)
		a.Log.Info("stream started", "stream", id, "attempts", fs.retry.Attempts+1)
		return
	}
	fs.err = err
	if f.stopped || fs.removed {
		return
	}
	a.scheduleRetry(fs)
	a.Log.Warn("stream failed to start", "stream", id, "attempt", fs.retry.Attempts,
		"retry_in", time.Until(fs.retry.Next).Round(time.Millisecond).String(),
		"err", redact.Message(err.Error(), fs.decl.Source))
}

// drop forgets id (f.mu held).
func (f *failedStreams) drop(id string) {
	delete(f.byID, id)
	for i, o := range f.order {
		if o == id {
			f.order = append(f.order[:i:i], f.order[i+1:]...)
			break
		}
	}
}

// has reports a failed stream listed under id.
func (f *failedStreams) has(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.byID[id]
	return ok
}

// remove forgets id and cancels its retries; false when no failed stream has that id.
func (f *failedStreams) remove(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fs, ok := f.byID[id]
	if !ok {
		return false
	}
	fs.removed = true
	if fs.timer != nil {
		fs.timer.Stop()
	}
	f.drop(id)
	return true
}

// stop cancels every pending attempt and waits for those running (each bounded by
// sources.open_timeout). The streams stay listed, for the run summary.
func (f *failedStreams) stop() {
	f.mu.Lock()
	f.stopped = true
	for _, fs := range f.byID {
		if fs.timer != nil {
			fs.timer.Stop()
		}
		if fs.retry != nil {
			fs.retry.Next = time.Time{}
		}
	}
	f.mu.Unlock()
	f.flight.Wait()
}

// info describes the failed streams, in order.
func (f *failedStreams) info() []defs.StreamInfo {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]defs.StreamInfo, 0, len(f.order))
	for _, id := range f.order {
		out = append(out, f.byID[id].info())
	}
	return out
}

// get describes one failed stream.
func (f *failedStreams) get(id string) (defs.StreamInfo, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fs, ok := f.byID[id]
	if !ok {
		return defs.StreamInfo{}, false
	}
	return fs.info(), true
}

// info describes fs (f.mu held).
func (fs *failedStream) info() defs.StreamInfo {
	si := defs.StreamInfo{Decl: fs.decl, Err: fs.err, Started: fs.added, Device: -1, Live: liveDecl(&fs.decl)}
	if fs.retry != nil {
		r := *fs.retry
		si.Retry = &r
	}
	return si
}

// liveDecl reports whether s names a live source (a camera, RTP, GB28181, or a file paced in
// real time), for a stream that could not open it.
func liveDecl(s *config.Stream) bool {
	return s.Realtime || (strings.Contains(s.Source, "://") && !strings.HasPrefix(s.Source, "file://"))
}
