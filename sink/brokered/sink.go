package brokered

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/deliver"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/outbox"
	"github.com/vinfer/vinfer/sink"
)

// Errors.
var (
	// ErrDuplicateName is returned by Open for a name another open sink has.
	ErrDuplicateName = errors.New("sink name already in use (give each sink its own name)")
	// ErrClosed is returned by Write after Close.
	ErrClosed = errors.New("brokered: sink closed")
)

var (
	namesMu sync.Mutex
	names   = map[string]bool{}
)

// Sink is a broker sink: Write appends the result's records to the sink's outbox and returns
// (it never waits for the broker); a deliver.Worker publishes them at least once.
type Sink struct {
	typ string
	s   Settings
	log *slog.Logger
	ob  *outbox.Outbox
	w   *deliver.Worker
	pub deliver.Publisher

	mu       sync.Mutex // Write, Retain and SeedCount; held briefly (appends to the outbox)
	buf      []byte
	every    map[string]int // results with detections seen per stream (one entry per stream)
	counts   counts         // with Settings.Counts
	closed   bool
	tooLarge atomic.Uint64
	lastLog  time.Time
}

// Open checks s (filling defaults), opens the sink's outbox, creates its publisher with
// newPub and starts delivering. typ is the sink's type (the default name). A publisher that
// implements io.Closer is closed by Close, after the Worker.
func Open(typ string, s *Settings, env sink.Env, newPub func() (deliver.Publisher, error)) (*Sink, error) {
	if err := s.check(typ); err != nil {
		return nil, fmt.Errorf("sink %s: %w", typ, err)
	}
	namesMu.Lock()
	if names[s.Name] {
		namesMu.Unlock()
		return nil, fmt.Errorf("sink %s: name %q: %w", typ, s.Name, ErrDuplicateName)
	}
	names[s.Name] = true
	namesMu.Unlock()
	log := env.Log
	if log == nil {
		log = slog.Default()
	}
	k := &Sink{typ: typ, s: *s, log: log.With("sink", s.Name), every: map[string]int{}, buf: make([]byte, 0, 4096)}
	k.ob = &outbox.Outbox{
		Dir: s.outboxDir(env.Dir, env.DataDir), MaxBytes: s.Outbox.MaxBytes, MaxAge: time.Duration(s.Outbox.MaxAge),
		Fsync: outbox.FsyncPolicy(s.Outbox.Fsync), FsyncEvery: time.Duration(s.Outbox.FsyncEvery), Logger: k.log,
	}
	if err := k.ob.Init(); err != nil {
		k.release()
		return nil, fmt.Errorf("sink %s: outbox: %w", s.Name, err)
	}
	pub, err := newPub()
	if err != nil {
		k.ob.Close()
		k.release()
		return nil, fmt.Errorf("sink %s: %w", s.Name, err)
	}
	k.pub = pub
	k.w = &deliver.Worker{
		Name: s.Name, Outbox: k.ob, Publisher: pub, MaxBatch: s.MaxBatch, Timeout: time.Duration(s.Timeout),
		MinBackoff: time.Duration(s.MinBackoff), MaxBackoff: time.Duration(s.MaxBackoff), Logger: log,
	}
	if err := k.w.Init(); err != nil {
		k.closePub()
		k.ob.Close()
		k.release()
		return nil, fmt.Errorf("sink %s: %w", s.Name, err)
	}
	return k, nil
}

// Name is the sink's name (its metrics label); Type its type.
func (k *Sink) Name() string { return k.s.Name }
func (k *Sink) Type() string { return k.typ }

// Carry is what the sink carries.
func (k *Sink) Carry() Carry { return k.s.Carry }

// Outbox returns the sink's outbox.
func (k *Sink) Outbox() *outbox.Outbox { return k.ob }

// Write appends r's events and, sampled, its detections to the outbox (see Settings.Carry). A
// record larger than the outbox accepts is skipped and counted (Stats().Undeliverable); one the
// outbox has no room for (its file system full) is counted dropped by the outbox
// (Stats().Dropped, disk_full); another outbox I/O error is returned.
func (k *Sink) Write(r *sink.Result) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return ErrClosed
	}
	if k.s.Carry.Events() {
		for i := range r.Events {
			e := &r.Events[i]
			id := e.ID
			if id.IsZero() { // the producer always sets one; never send an event without a key
				id = event.NewID(time.Now())
			}
			stream := e.Stream
			if stream == "" {
				stream = r.Stream
			}
			b := AppendRecord(k.buf[:0], KindEvent, id, routable(stream), e.Type.String())
			k.buf = e.AppendJSON(b)
			if err := k.append(k.buf); err != nil {
				return err
			}
		}
	}
	if k.s.Counts {
		if err := k.writeCounts(r); err != nil {
			return err
		}
	}
	if k.s.Carry.Detections() && len(r.Detections) > 0 {
		n := k.every[r.Stream]
		k.every[r.Stream] = n + 1
		if n%k.s.DetectionsEvery == 0 {
			b := AppendRecord(k.buf[:0], KindDetections, event.NewID(time.Now()), routable(r.Stream), TypeDetections)
			k.buf = sink.AppendJSON(b, r)
			if err := k.append(k.buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeCounts counts r's zone and line events and appends a count record for each zone or
// line they changed.
func (k *Sink) writeCounts(r *sink.Result) error {
	for i := range r.Events {
		e := &r.Events[i]
		stream := e.Stream
		if stream == "" {
			stream = r.Stream
		}
		k.counts.add(routable(stream), e)
	}
	var err error
	for _, p := range k.counts.dirty {
		p.dirty = false
		if err == nil {
			b := AppendRecord(k.buf[:0], KindCount, event.NewID(time.Now()), p.stream, p.name)
			k.buf = p.appendJSON(b)
			err = k.append(k.buf)
		}
	}
	k.counts.dirty = k.counts.dirty[:0]
	return err
}

// routable bounds a stream id to the record format's 1–255 bytes.
func routable(s string) string {
	if s == "" {
		return "-"
	}
	return s[:min(len(s), 255)]
}

func (k *Sink) append(b []byte) error {
	_, err := k.ob.Append(b)
	if errors.Is(err, outbox.ErrDiskFull) || errors.Is(err, outbox.ErrFull) {
		return nil // counted dropped and logged by the outbox
	}
	if errors.Is(err, outbox.ErrTooLarge) {
		n := k.tooLarge.Add(1)
		if now := time.Now(); now.Sub(k.lastLog) >= time.Minute {
			k.lastLog = now
			k.log.Warn("sink: record not queued", "error", err, "bytes", len(b), "total", n)
		}
		return nil
	}
	return err
}

// Stats returns the sink's delivery counters and outbox backlog; records too large for the
// outbox count as Undeliverable.
func (k *Sink) Stats() deliver.Stats {
	st := k.w.Stats()
	st.Undeliverable += k.tooLarge.Load()
	return st
}

// Close makes what was written durable, waits up to DrainTimeout for its delivery, then stops
// the Worker, closes the publisher and the outbox. Undelivered records stay in the outbox and
// are delivered by the next run.
func (k *Sink) Close() error {
	k.mu.Lock()
	if k.closed {
		k.mu.Unlock()
		return nil
	}
	k.closed = true
	k.mu.Unlock()
	err := k.ob.Sync()
	deadline := time.Now().Add(time.Duration(k.s.DrainTimeout))
	tick := time.NewTicker(10 * time.Millisecond)
	for k.w.Stats().Depth > 0 && time.Now().Before(deadline) {
		<-tick.C
	}
	tick.Stop()
	if d := k.w.Stats().Depth; d > 0 {
		k.log.Warn("sink: closing with undelivered records, kept for the next run", "records", d)
	}
	err = errors.Join(err, k.w.Close(), k.closePub(), k.ob.Close())
	k.release()
	return err
}

func (k *Sink) closePub() error {
	if c, ok := k.pub.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

func (k *Sink) release() {
	namesMu.Lock()
	delete(names, k.s.Name)
	namesMu.Unlock()
}
