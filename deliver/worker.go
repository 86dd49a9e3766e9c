package deliver

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/outbox"
)

// Worker delivers one sink's records from an Outbox to its Publisher, in a goroutine of its
// own. Set the exported fields, call Init, and Close when done (before closing the Outbox).
type Worker struct {
	// Name is the sink's name, used as its outbox consumer name (see outbox.Consumer).
	Name string
	// Outbox is the log to read.
	Outbox *outbox.Outbox
	// Publisher sends the records.
	Publisher Publisher
	// MaxBatch bounds the records per Publish call (default 256).
	MaxBatch int
	// MaxBatchBytes bounds the encoded bytes per Publish call, unless one record alone is
	// larger (default 1 MiB).
	MaxBatchBytes int
	// Timeout bounds each Publish call (default 30 s).
	Timeout time.Duration
	// MinBackoff and MaxBackoff bound the wait between failed attempts: it doubles from
	// MinBackoff up to MaxBackoff, with jitter (defaults 100 ms and 30 s).
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// Logger receives the down and up lines (default slog.Default()).
	Logger *slog.Logger

	c      *outbox.Consumer
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	delivered     atomic.Uint64
	retried       atomic.Uint64
	failed        atomic.Uint64
	undeliverable atomic.Uint64

	mu        sync.Mutex
	down      bool
	downSince time.Time
	downFails uint64
	lastErr   string
	lastSkip  time.Time
}

// Init opens the sink's outbox consumer and starts delivering.
func (w *Worker) Init() error {
	if w.Outbox == nil || w.Publisher == nil {
		return errors.New("deliver: Outbox or Publisher missing")
	}
	if w.MaxBatch <= 0 {
		w.MaxBatch = 256
	}
	if w.MaxBatchBytes <= 0 {
		w.MaxBatchBytes = 1 << 20
	}
	if w.Timeout <= 0 {
		w.Timeout = 30 * time.Second
	}
	if w.MinBackoff <= 0 {
		w.MinBackoff = 100 * time.Millisecond
	}
	if w.MaxBackoff < w.MinBackoff {
		w.MaxBackoff = max(30*time.Second, w.MinBackoff)
	}
	if w.Logger == nil {
		w.Logger = slog.Default()
	}
	c, err := w.Outbox.Consumer(w.Name)
	if err != nil {
		return err
	}
	w.c = c
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.done = make(chan struct{})
	go w.run()
	return nil
}

// Close stops delivering (an in-flight Publish sees its context cancelled), waits for the
// goroutine and persists the cursor.
func (w *Worker) Close() error {
	w.cancel()
	<-w.done
	return w.c.Close()
}

func (w *Worker) run() {
	defer close(w.done)
	readFails := 0
	for {
		recs, err := w.c.Read(w.ctx, w.MaxBatch, w.MaxBatchBytes)
		if w.ctx.Err() != nil || errors.Is(err, outbox.ErrClosed) {
			return
		}
		if err != nil {
			// An I/O error reading the log: retry from the cursor.
			if readFails == 0 {
				w.Logger.Error("deliver: reading the outbox failed", "sink", w.Name, "error", err)
			}
			if !w.sleep(backoff(readFails, w.MinBackoff, w.MaxBackoff, rand.Int64N)) {
				return
			}
			readFails++
			w.c.Rewind()
			continue
		}
		readFails = 0
		if !w.deliver(recs) {
			return
		}
	}
}

// deliver publishes recs until each is delivered or undeliverable: records read are this
// Worker's, kept in memory even if the outbox drops them meanwhile. It returns false when the
// Worker stops.
func (w *Worker) deliver(recs []outbox.Record) bool {
	for attempt := 0; len(recs) > 0; {
		if attempt > 0 {
			w.retried.Add(uint64(len(recs)))
		}
		ctx, cancel := context.WithTimeout(w.ctx, w.Timeout)
		n, err := w.Publisher.Publish(ctx, recs)
		cancel()
		if err == nil {
			n = len(recs)
		}
		n = min(max(n, 0), len(recs))
		if n > 0 {
			if !w.ack(recs[n-1].Seq) {
				return false
			}
			w.delivered.Add(uint64(n))
			recs = recs[n:]
		}
		if err == nil {
			w.setUp()
			return true
		}
		if w.ctx.Err() != nil {
			return false
		}
		if errors.Is(err, ErrUndeliverable) && len(recs) > 0 {
			w.skip(recs[0], err)
			if !w.ack(recs[0].Seq) {
				return false
			}
			recs = recs[1:]
			w.setUp()
			attempt = 0
			continue
		}
		w.failed.Add(1)
		w.setDown(err)
		if !w.sleep(backoff(attempt, w.MinBackoff, w.MaxBackoff, rand.Int64N)) {
			return false
		}
		attempt++
	}
	return true
}

// ack acknowledges up to seq; false when the outbox is closed.
func (w *Worker) ack(seq uint64) bool {
	err := w.c.Ack(seq)
	if errors.Is(err, outbox.ErrClosed) {
		return false
	}
	if err != nil {
		w.Logger.Error("deliver: persisting the cursor failed", "sink", w.Name, "error", err)
	}
	return true
}

// sleep waits d; false when the Worker stops first.
func (w *Worker) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// skip counts an undeliverable record, logging at most once a minute.
func (w *Worker) skip(r outbox.Record, err error) {
	n := w.undeliverable.Add(1)
	w.mu.Lock()
	defer w.mu.Unlock()
	if now := time.Now(); now.Sub(w.lastSkip) >= time.Minute {
		w.lastSkip = now
		w.Logger.Warn("deliver: undeliverable record skipped", "sink", w.Name, "seq", r.Seq,
			"error", err, "total", n)
	}
}

func (w *Worker) setDown(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastErr = err.Error()
	w.downFails++
	if !w.down {
		w.down, w.downSince = true, time.Now()
		w.Logger.Warn("deliver: sink down, retrying with backoff", "sink", w.Name, "error", err)
	}
}

func (w *Worker) setUp() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		w.Logger.Info("deliver: sink up again", "sink", w.Name,
			"down_for", time.Since(w.downSince).Round(time.Millisecond), "failed_attempts", w.downFails,
			"last_error", w.lastErr)
		w.down, w.downFails = false, 0
	}
}

// Stats returns a snapshot of the Worker's counters and its sink's backlog (after Init).
func (w *Worker) Stats() Stats {
	cs := w.c.Stats()
	st := Stats{
		Delivered:     w.delivered.Load(),
		Retried:       w.retried.Load(),
		Failed:        w.failed.Load(),
		Undeliverable: w.undeliverable.Load(),
		Dropped:       cs.Dropped,
		Depth:         cs.Records,
		DepthBytes:    cs.Bytes,
	}
	st.DiskFullSince = w.Outbox.Stats().DiskFullSince
	if !cs.Oldest.IsZero() {
		st.OldestAge = max(time.Since(cs.Oldest), 0)
	}
	w.mu.Lock()
	st.Up, st.LastError = !w.down, w.lastErr
	if w.down {
		st.DownSince = w.downSince
	}
	w.mu.Unlock()
	return st
}
