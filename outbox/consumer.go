package outbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// Consumer reads the log from its cursor: the sequence number of the last record it
// acknowledged. Read, Rewind and Close belong to one goroutine (Close after the last Read has
// returned: cancel its context); Ack, Flush and Stats may be called from any goroutine.
type Consumer struct {
	o    *Outbox
	name string

	flushMu sync.Mutex

	// Guarded by o.mu.
	open         bool
	acked        uint64 // last acknowledged
	persisted    uint64 // in the cursor file
	rseq         uint64 // next to read
	rseg         *segment
	roff         int64 // offset of rseq in rseg
	dropped      [NumReasons]uint64
	held         []heldRun // read, not acknowledged, their segment dropped since (oldest first)
	flushPending bool
	flushTimer   *time.Timer
}

// heldRun is a run of consecutive records a consumer has read and not acknowledged whose
// segment the bounds dropped: they are the reader's to deliver (pending) until acknowledged,
// and dropped for reason if the reader gives them up (Rewind, Close).
type heldRun struct {
	first, last uint64
	reason      Reason
	time        int64 // append time of first, Unix ns
}

// Consumer opens the named consumer. A consumer never seen before (no cursor file) starts at
// the oldest retained record and gets its cursor file now, so the log keeps its records from
// then on, across restarts, until it acknowledges them or RemoveConsumer. Errors:
// ErrConsumerName, ErrConsumerBusy (already open), ErrClosed, or an I/O error.
func (o *Outbox) Consumer(name string) (*Consumer, error) {
	if !validName(name) {
		return nil, ErrConsumerName
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closing {
		return nil, ErrClosed
	}
	c := o.consumers[name]
	if c != nil && c.open {
		return nil, ErrConsumerBusy
	}
	if c == nil {
		start := o.firstSeq() - 1
		if err := writeCursor(o.Dir, name, start, o.Fsync != FsyncNever); err != nil {
			return nil, err
		}
		c = &Consumer{o: o, name: name, acked: start, persisted: start}
		o.consumers[name] = c
	}
	c.open = true
	c.rseq, c.rseg = c.acked+1, nil
	return c, nil
}

// RemoveConsumer forgets a consumer that is not open: its cursor file is deleted and it no
// longer holds back segment deletion. Errors: ErrConsumerBusy, ErrClosed.
func (o *Outbox) RemoveConsumer(name string) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	c := o.consumers[name]
	if c == nil {
		return nil
	}
	if c.open {
		return ErrConsumerBusy
	}
	delete(o.consumers, name)
	if err := os.Remove(filepath.Join(o.Dir, name+cursorExt)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	o.collect()
	return nil
}

// seen returns the last sequence number the consumer acknowledged or read. Called with o.mu
// held.
func (c *Consumer) seen() uint64 {
	if c.rseq > c.acked+1 {
		return c.rseq - 1
	}
	return c.acked
}

// Name returns the consumer's name.
func (c *Consumer) Name() string { return c.name }

// Read returns the next records after those already read: at least one, at most maxRecords,
// and about maxBytes of encoded records at most (a larger record comes alone). It waits for a
// record until ctx is done (returning ctx.Err()) or the outbox closes (ErrClosed). The records
// belong to the caller, who delivers them even if the bounds drop them from the log before
// they are acknowledged: drops count only records not read yet, which Read skips. Records
// behind a checksum failure are skipped to the next segment (counted as ReasonCorrupt).
func (c *Consumer) Read(ctx context.Context, maxRecords, maxBytes int) ([]Record, error) {
	o := c.o
	maxRecords = max(maxRecords, 1)
	for {
		o.mu.Lock()
		if o.closed || !c.open {
			o.mu.Unlock()
			return nil, ErrClosed
		}
		s, off, err := c.position()
		if err != nil {
			o.mu.Unlock()
			return nil, err
		}
		if s == nil {
			o.waiting = true
			ch := o.notify
			o.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-o.done:
			case <-ch:
			}
			continue
		}
		limit, seq := s.size, c.rseq
		s.refs++
		o.mu.Unlock()
		recs, end, err := s.read(off, limit, seq, maxRecords, maxBytes, MaxRecordLimit)
		if o.readHook != nil {
			o.readHook()
		}
		o.mu.Lock()
		o.unref(s)
		if c.rseg != s || c.rseq != seq || !c.open || s.removed {
			// Rewound or closed meanwhile, or s dropped by the bounds while it was read: the
			// drop counted these records as not read yet, so they are not handed out (else
			// they would count as both dropped and delivered). Start over.
			o.mu.Unlock()
			continue
		}
		if errors.Is(err, ErrCorrupt) && !s.removed {
			next := seq + uint64(len(recs))
			lost := s.last + 1 - next
			o.Logger.Error("outbox: corrupt record, skipping the rest of the segment",
				"file", s.path, "consumer", c.name, "seq", next, "records", lost)
			c.dropped[ReasonCorrupt] += lost
			o.stats.Dropped[ReasonCorrupt] += lost
			c.rseq, c.rseg = s.last+1, nil
			o.mu.Unlock()
			if len(recs) > 0 {
				return recs, nil
			}
			continue
		}
		if err != nil {
			o.mu.Unlock()
			return nil, err
		}
		c.roff, c.rseq = end, recs[len(recs)-1].Seq+1
		o.mu.Unlock()
		return recs, nil
	}
}

// position returns the segment and offset of the next record to read, or nil when it has
// not been appended yet. Called with o.mu held.
func (c *Consumer) position() (*segment, int64, error) {
	o := c.o
	if s := c.rseg; s != nil && !s.removed {
		if c.roff < s.size {
			return s, c.roff, nil
		}
		if !s.sealed {
			return nil, 0, nil
		}
	}
	c.rseg = nil
	i := sort.Search(len(o.segs), func(i int) bool { return o.segs[i].last >= c.rseq })
	for i < len(o.segs) && o.segs[i].count() == 0 {
		i++
	}
	if i == len(o.segs) {
		return nil, 0, nil
	}
	s := o.segs[i]
	c.rseq = max(c.rseq, s.base) // records before s were dropped
	off, err := s.offsetOf(c.rseq)
	if err != nil {
		return nil, 0, err
	}
	c.rseg, c.roff = s, off
	return s, off, nil
}

// Ack acknowledges every record up to and including seq; the cursor is persisted within
// CursorEvery (Flush persists it now). Errors: ErrAckAhead (seq not read yet), ErrClosed, or
// the I/O error of an immediate persist.
func (c *Consumer) Ack(seq uint64) error {
	o := c.o
	o.mu.Lock()
	if o.closed || !c.open {
		o.mu.Unlock()
		return ErrClosed
	}
	if seq >= c.rseq {
		o.mu.Unlock()
		return ErrAckAhead
	}
	if seq <= c.acked {
		o.mu.Unlock()
		return nil
	}
	c.acked = seq
	c.release(seq)
	if o.CursorEvery < 0 {
		o.mu.Unlock()
		return c.Flush()
	}
	if !c.flushPending {
		c.flushPending = true
		if c.flushTimer == nil {
			c.flushTimer = time.AfterFunc(o.CursorEvery, c.backgroundFlush)
		} else {
			c.flushTimer.Reset(o.CursorEvery)
		}
	}
	o.mu.Unlock()
	return nil
}

func (c *Consumer) backgroundFlush() {
	if err := c.Flush(); err != nil && !errors.Is(err, ErrClosed) {
		c.o.Logger.Error("outbox: writing a cursor failed", "consumer", c.name, "error", err)
	}
}

// Flush writes the consumer's cursor file now if it changed, then deletes the segments every
// consumer is past.
func (c *Consumer) Flush() error {
	o := c.o
	c.flushMu.Lock()
	defer c.flushMu.Unlock()
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return ErrClosed
	}
	seq := c.acked
	c.flushPending = false
	if seq == c.persisted {
		o.mu.Unlock()
		return nil
	}
	o.mu.Unlock()
	err := writeCursor(o.Dir, c.name, seq, o.Fsync != FsyncNever)
	o.mu.Lock()
	defer o.mu.Unlock()
	if err != nil {
		return err
	}
	c.persisted = max(c.persisted, seq)
	o.collect()
	return nil
}

// Rewind makes the next Read start again after the last acknowledged record. Records read and
// not acknowledged whose segment the bounds dropped meanwhile are given up: counted as dropped
// (their drop's reason) and skipped; the next Read starts at the oldest retained record after
// the cursor.
func (c *Consumer) Rewind() {
	c.o.mu.Lock()
	c.giveUp()
	c.rseq, c.rseg = c.acked+1, nil
	c.o.mu.Unlock()
}

// hold notes that records first..last of s, read by c and not acknowledged, are dropped from
// the log with s for reason r. Called with o.mu held, before s is removed.
func (c *Consumer) hold(s *segment, first, last uint64, r Reason) {
	if n := len(c.held); n > 0 && c.held[n-1].reason == r && c.held[n-1].last+1 == first {
		c.held[n-1].last = last
		return
	}
	t := s.firstTime
	if first > s.base {
		if off, err := s.offsetOf(first); err == nil {
			if ft, err := s.timeAt(off); err == nil {
				t = ft
			}
		}
	}
	c.held = append(c.held, heldRun{first: first, last: last, reason: r, time: t})
}

// release forgets the held records up to seq, now acknowledged. Called with o.mu held.
func (c *Consumer) release(seq uint64) {
	i := 0
	for i < len(c.held) && c.held[i].last <= seq {
		i++
	}
	c.held = append(c.held[:0], c.held[i:]...)
	if len(c.held) > 0 && c.held[0].first <= seq {
		c.held[0].first = seq + 1 // its time stays that of the run's first record: an upper bound
	}
}

// giveUp counts the held records as dropped: the reader will not acknowledge them and the log
// no longer has them. Called with o.mu held.
func (c *Consumer) giveUp() {
	if len(c.held) == 0 {
		return
	}
	var n uint64
	for _, h := range c.held {
		c.dropped[h.reason] += h.last + 1 - h.first
		n += h.last + 1 - h.first
	}
	c.held = c.held[:0]
	c.o.Logger.Warn("outbox: records read and not acknowledged were dropped from the log; given up",
		"dir", c.o.Dir, "consumer", c.name, "records", n)
}

// Close persists the cursor and closes the consumer (giving up held records as Rewind does);
// the name may be opened again.
func (c *Consumer) Close() error {
	err := c.Flush()
	if errors.Is(err, ErrClosed) {
		err = nil
	}
	c.o.mu.Lock()
	c.giveUp()
	c.open = false
	c.rseq, c.rseg = 0, nil
	c.o.mu.Unlock()
	return err
}

// Stats returns a snapshot of the consumer's position and what it has left to read.
func (c *Consumer) Stats() ConsumerStats {
	o := c.o
	o.mu.Lock()
	defer o.mu.Unlock()
	st := ConsumerStats{Acked: c.acked, Persisted: c.persisted, Dropped: c.dropped}
	if o.closed {
		return st
	}
	for _, h := range c.held {
		st.Records += h.last + 1 - h.first
		st.Held += h.last + 1 - h.first
	}
	if len(c.held) > 0 {
		st.Oldest = time.Unix(0, c.held[0].time)
	}
	for _, s := range o.segs {
		if s.last <= c.acked || s.count() == 0 {
			continue
		}
		first := max(c.acked+1, s.base)
		off := int64(segHeaderSize)
		if first > s.base {
			var err error
			if off, err = s.offsetOf(first); err != nil || o.closed {
				continue
			}
		}
		if st.Oldest.IsZero() {
			if t, err := s.timeAt(off); err == nil {
				st.Oldest = time.Unix(0, t)
			}
		}
		st.Records += s.last + 1 - first
		st.Bytes += s.size - off
	}
	return st
}
