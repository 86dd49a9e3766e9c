package live

import (
	"context"
	"errors"
	"sync"

	"github.com/vinfer/vinfer/media"
)

// ErrClosed is returned by Read of a live source after Close.
var ErrClosed = errors.New("source closed")

// DefaultQueueSize is the number of access units a Queue buffers when none is configured.
const DefaultQueueSize = 32

// Queue hands access units from the goroutine that receives them to the single goroutine that
// calls Pop (the source's Read). It owns a fixed set of slots whose Data buffers are reused, so
// after warm-up it does not allocate. A full queue drops the new access unit: the producer must
// then resume at the next key frame.
type Queue struct {
	ready chan *media.AccessUnit
	free  chan *media.AccessUnit
	held  *media.AccessUnit
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	err   error
}

// NewQueue returns a queue of size access units (DefaultQueueSize when size <= 0).
func NewQueue(size int) *Queue {
	if size <= 0 {
		size = DefaultQueueSize
	}
	q := &Queue{
		ready: make(chan *media.AccessUnit, size+1),
		free:  make(chan *media.AccessUnit, size+1),
		done:  make(chan struct{}),
	}
	for range size + 1 {
		q.free <- &media.AccessUnit{}
	}
	return q
}

// Push copies au into the queue. It returns false, dropping au, when the reader is a full queue
// behind or the queue is closed.
func (q *Queue) Push(au *media.AccessUnit) bool {
	var s *media.AccessUnit
	select {
	case s = <-q.free:
	default:
		return false
	}
	data := append(s.Data[:0], au.Data...)
	*s = *au
	s.Data = data
	select {
	case q.ready <- s:
		return true
	default: // cannot happen: there are as many slots as ready capacity
		q.free <- s
		return false
	}
}

// Pop returns the next access unit, blocking until there is one. The access unit stays valid
// until the next Pop. It returns ctx.Err() when ctx is done, ErrClosed after Close, and the
// error given to Fail.
func (q *Queue) Pop(ctx context.Context) (*media.AccessUnit, error) {
	if q.held != nil {
		q.free <- q.held
		q.held = nil
	}
	// a failure or close wins over queued access units
	select {
	case <-q.done:
		return nil, q.failure()
	default:
	}
	select {
	case au := <-q.ready:
		q.held = au
		return au, nil
	case <-q.done:
		return nil, q.failure()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Fail makes Pop return err from now on (a permanent error such as an unsupported codec).
func (q *Queue) Fail(err error) {
	q.mu.Lock()
	if q.err == nil {
		q.err = err
	}
	q.mu.Unlock()
	q.once.Do(func() { close(q.done) })
}

// Close makes Pop return ErrClosed. Safe to call more than once.
func (q *Queue) Close() { q.Fail(ErrClosed) }

func (q *Queue) failure() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}
