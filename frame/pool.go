package frame

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

var debug atomic.Bool

func init() { debug.Store(os.Getenv("VINFER_FRAME_DEBUG") == "1") }

// SetDebug turns debug accounting on or off for pools created afterwards (see the package doc).
func SetDebug(on bool) { debug.Store(on) }

func debugEnabled() bool { return debug.Load() }

// ErrPoolClosed is returned by Get after Close.
var ErrPoolClosed = errors.New("frame: pool closed")

// Stats is a pool's accounting.
type Stats struct {
	Capacity  int // most frames that can exist at once
	Allocated int // frames created so far (≤ Capacity)
	InUse     int // frames taken and not yet released
	Free      int // allocated frames ready for Get
	HighWater int // most frames in use at once
}

// Pool hands out at most Capacity frames of one size class. Frames are created lazily (backing
// allocated by the pool's constructor) and recycled on their last Release.
type Pool struct {
	name       string
	newBacking func() (Backing, error)
	free       chan *Frame

	mu        sync.Mutex
	allocated int
	inUse     int
	highWater int
	closed    bool
	debug     bool
	taken     map[*Frame]struct{}
	misuses   []string
	idle      chan struct{} // closed when inUse drops to 0 while someone waits (WaitIdle)
}

// NewPool returns a pool of at most capacity frames. newBacking allocates a frame's native
// memory (nil: frames without a backing, planes set by the user).
func NewPool(name string, capacity int, newBacking func() (Backing, error)) *Pool {
	if capacity < 1 {
		capacity = 1
	}
	p := &Pool{name: name, newBacking: newBacking, free: make(chan *Frame, capacity), debug: debugEnabled()}
	if p.debug {
		p.taken = make(map[*Frame]struct{})
	}
	return p
}

// Name returns the pool's name as given to NewPool.
func (p *Pool) Name() string { return p.name }

// Get takes a frame, waiting while all Capacity frames are in use. It returns ctx.Err() when ctx
// ends first, ErrPoolClosed after Close, or the backing constructor's error.
func (p *Pool) Get(ctx context.Context) (*Frame, error) {
	for {
		if f, ok, err := p.TryGet(); ok || err != nil {
			return f, err
		}
		select {
		case f := <-p.free:
			return p.take(f)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// TryGet takes a frame without waiting; ok is false when all frames are in use.
func (p *Pool) TryGet() (f *Frame, ok bool, err error) {
	select {
	case f = <-p.free:
		f, err = p.take(f)
		return f, err == nil, err
	default:
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, ErrPoolClosed
	}
	if p.allocated >= cap(p.free) {
		p.mu.Unlock()
		return nil, false, nil
	}
	p.allocated++
	p.mu.Unlock()
	f = &Frame{Device: -1, pool: p}
	if p.newBacking != nil {
		b, err := p.newBacking()
		if err != nil {
			p.mu.Lock()
			p.allocated--
			p.mu.Unlock()
			return nil, false, fmt.Errorf("frame pool %s: allocating frame: %w", p.name, err)
		}
		f.Backing = b
	}
	f, err = p.take(f)
	return f, err == nil, err
}

func (p *Pool) take(f *Frame) (*Frame, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.freeFrame(f)
		return nil, ErrPoolClosed
	}
	p.inUse++
	if p.inUse > p.highWater {
		p.highWater = p.inUse
	}
	f.refs.Store(1)
	f.Device = -1
	if p.debug {
		p.taken[f] = struct{}{}
		f.taken = caller()
	}
	return f, nil
}

func (p *Pool) put(f *Frame) {
	p.mu.Lock()
	p.inUse--
	if p.inUse == 0 && p.idle != nil {
		close(p.idle)
		p.idle = nil
	}
	if p.debug {
		delete(p.taken, f)
	}
	if p.closed {
		p.freeFrame(f)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.free <- f // never blocks: at most cap frames exist
}

// freeFrame releases a frame's backing for good; p.mu held.
func (p *Pool) freeFrame(f *Frame) {
	if f.Backing != nil {
		f.Backing.Free()
		f.Backing = nil
	}
	p.allocated--
}

func (p *Pool) recordMisuse(s string) {
	p.mu.Lock()
	p.misuses = append(p.misuses, s)
	p.mu.Unlock()
}

// Stats returns the pool's accounting.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Stats{Capacity: cap(p.free), Allocated: p.allocated, InUse: p.inUse,
		Free: p.allocated - p.inUse, HighWater: p.highWater}
}

// WaitIdle waits until every frame taken from the pool was released, or ctx ends; it reports
// whether the pool is idle.
func (p *Pool) WaitIdle(ctx context.Context) bool {
	p.mu.Lock()
	if p.inUse == 0 {
		p.mu.Unlock()
		return true
	}
	if p.idle == nil {
		p.idle = make(chan struct{})
	}
	idle := p.idle
	p.mu.Unlock()
	select {
	case <-idle:
		return true
	case <-ctx.Done():
		return false
	}
}

// Close frees every free frame's backing; frames still in use are freed on their last Release.
// It returns an error naming frames still held (with where they were taken, in debug mode) and
// any misuse recorded in debug mode. Get fails with ErrPoolClosed afterwards.
func (p *Pool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		p.closed = true
		for done := false; !done; {
			select {
			case f := <-p.free:
				p.freeFrame(f)
			default:
				done = true
			}
		}
	}
	var problems []string
	if p.inUse > 0 {
		s := fmt.Sprintf("%d frame(s) never released", p.inUse)
		for f := range p.taken {
			s += "\n  taken at " + f.taken
		}
		problems = append(problems, s)
	}
	problems = append(problems, p.misuses...)
	if len(problems) > 0 {
		return fmt.Errorf("frame pool %s: %s", p.name, strings.Join(problems, "; "))
	}
	return nil
}

func caller() string {
	var pcs [8]uintptr
	n := runtime.Callers(4, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	var b strings.Builder
	for {
		fr, more := frames.Next()
		if !strings.HasPrefix(fr.Function, "runtime.") {
			fmt.Fprintf(&b, "%s (%s:%d) ", fr.Function, fr.File, fr.Line)
		}
		if !more || b.Len() > 300 {
			break
		}
	}
	return b.String()
}
