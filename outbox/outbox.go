package outbox

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// FullPolicy is what Append does when a record does not fit under MaxBytes.
type FullPolicy uint8

// Full policies.
const (
	// DropOldest (the default) drops the oldest segments, delivered or not: producers never
	// block or fail.
	DropOldest FullPolicy = iota
	// Reject refuses the new record with ErrFull.
	Reject
)

const dropEpisodeGap = time.Minute

// Outbox is a durable append-only log of records. Set the exported fields, then call Init.
// Its methods are safe for concurrent use.
type Outbox struct {
	// Dir holds the log; created when missing.
	Dir string
	// SegmentSize is the size in bytes at which a segment is closed and a new one started
	// (default 64 MiB; at most MaxBytes/2).
	SegmentSize int64
	// MaxRecordSize bounds a record's payload in bytes (default 1 MiB; at most MaxRecordLimit
	// and SegmentSize less the headers).
	MaxRecordSize int
	// MaxBytes bounds the bytes of all segment files (default 1 GiB).
	MaxBytes int64
	// MaxAge drops records older than this, a segment at a time (0: no age limit).
	MaxAge time.Duration
	// Full is what Append does when MaxBytes is reached (default DropOldest).
	Full FullPolicy
	// Fsync is the durability policy (default FsyncInterval).
	Fsync FsyncPolicy
	// FsyncEvery is the longest time a record waits for its fsync under FsyncInterval
	// (default 10 ms).
	FsyncEvery time.Duration
	// CursorEvery is the longest time an acknowledgement waits before its cursor is written
	// (default 100 ms; negative: written within Ack). It bounds the duplicates after a crash.
	CursorEvery time.Duration
	// Logger receives recovery, drop-episode and sync-failure lines (default slog.Default()).
	Logger *slog.Logger

	now      func() time.Time
	readHook func() // tests: called by Read between its file read and taking the mutex again
	lockFile *os.File
	done     chan struct{}

	mu          sync.Mutex
	closing     bool // Close has begun: no more appends or consumers
	closed      bool
	segs        []*segment // by base; the last one may be active
	active      *segment   // receives appends; nil until the next Append creates one
	nextSeq     uint64
	written     uint64 // last sequence number written
	bytes       int64
	consumers   map[string]*Consumer
	notify      chan struct{} // closed when a record is appended while waiting is set
	waiting     bool
	buf         []byte
	syncPending bool
	syncTimer   *time.Timer
	ageTimer    *time.Timer
	ageDeadline time.Time
	lastDrop    [NumReasons]time.Time
	fullFrom    uint64 // Stats.Dropped[ReasonDiskFull] when the disk-full episode began
	stats       Stats

	syncMu sync.Mutex
	synced atomic.Uint64 // records up to this sequence number are durable
}

// Init validates the configuration, locks and recovers Dir (see the package documentation)
// and loads the consumers' cursors.
func (o *Outbox) Init() error {
	if o.Dir == "" {
		return errors.New("outbox: Dir is empty")
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = 1 << 30
	}
	if o.SegmentSize == 0 {
		o.SegmentSize = min(64<<20, o.MaxBytes/2)
	}
	if o.MaxRecordSize == 0 {
		o.MaxRecordSize = int(min(1<<20, o.SegmentSize-segHeaderSize-recordHeaderSize))
	}
	if o.FsyncEvery == 0 {
		o.FsyncEvery = 10 * time.Millisecond
	}
	if o.CursorEvery == 0 {
		o.CursorEvery = 100 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.SegmentSize < segHeaderSize+recordHeaderSize+1 || o.SegmentSize > o.MaxBytes/2:
		return fmt.Errorf("outbox: SegmentSize %d out of range [%d, MaxBytes/2]", o.SegmentSize,
			segHeaderSize+recordHeaderSize+1)
	case o.MaxRecordSize < 1 || o.MaxRecordSize > MaxRecordLimit ||
		encodedSize(o.MaxRecordSize)+segHeaderSize > o.SegmentSize:
		return fmt.Errorf("outbox: MaxRecordSize %d out of range [1, min(%d, SegmentSize-%d)]",
			o.MaxRecordSize, MaxRecordLimit, segHeaderSize+recordHeaderSize)
	case o.MaxAge < 0 || o.FsyncEvery < 0 || o.Full > Reject || o.Fsync > FsyncNever:
		return errors.New("outbox: invalid MaxAge, FsyncEvery, Full or Fsync")
	}
	if o.now == nil {
		o.now = time.Now
	}
	if err := os.MkdirAll(o.Dir, 0o750); err != nil {
		return err
	}
	if err := o.lock(); err != nil {
		return err
	}
	o.consumers = map[string]*Consumer{}
	o.notify = make(chan struct{})
	o.done = make(chan struct{})
	if err := o.recover(); err != nil {
		o.closeFiles()
		o.lockFile.Close()
		return err
	}
	o.syncTimer = time.AfterFunc(time.Hour, o.backgroundSync)
	o.syncTimer.Stop()
	o.ageTimer = time.AfterFunc(time.Hour, o.backgroundExpire)
	o.ageTimer.Stop()
	o.mu.Lock()
	now := o.now()
	o.expire(now)
	o.makeRoom(0, now)
	o.mu.Unlock()
	return nil
}

// Append adds a record and returns its sequence number. Under FsyncAlways it returns once the
// record is durable. Errors: ErrTooLarge, ErrFull (Reject), ErrDiskFull (no space left on
// the file system; counted as ReasonDiskFull, and each Append tries again), ErrClosed, another
// I/O error (the record is not in the log), or, under FsyncAlways, an fsync error with the sequence number (the
// record is in the log but may not survive a crash).
func (o *Outbox) Append(data []byte) (uint64, error) {
	if len(data) > o.MaxRecordSize {
		return 0, ErrTooLarge
	}
	o.mu.Lock()
	if o.closing {
		o.mu.Unlock()
		return 0, ErrClosed
	}
	now := o.now()
	o.expire(now)
	seq, err := o.write(data, now)
	if noSpace(err) && o.reclaim() {
		seq, err = o.write(data, now) // delivered segments gave their space back: once more
	}
	if err != nil {
		if noSpace(err) {
			err = o.diskFull(err, now)
		}
		o.mu.Unlock()
		return 0, err
	}
	o.writable(now)
	o.stats.Appended++
	if o.waiting {
		close(o.notify)
		o.notify = make(chan struct{})
		o.waiting = false
	}
	if o.Fsync == FsyncInterval && !o.syncPending {
		o.syncPending = true
		o.syncTimer.Reset(o.FsyncEvery)
	}
	if o.MaxAge > 0 && o.ageDeadline.IsZero() {
		o.scheduleExpire(now)
	}
	o.mu.Unlock()
	if o.Fsync == FsyncAlways {
		return seq, o.syncTo(seq)
	}
	return seq, nil
}

// write appends one record to the active segment, rolling and making room first. Called with
// o.mu held.
func (o *Outbox) write(data []byte, now time.Time) (uint64, error) {
	size := encodedSize(len(data))
	roll := o.active == nil || o.active.size+size > o.SegmentSize && o.active.count() > 0
	need := size
	if roll {
		need += segHeaderSize
	}
	if o.Full == Reject && o.bytes+need > o.MaxBytes {
		o.collect()
		if o.bytes+need > o.MaxBytes {
			o.reject(now)
			return 0, ErrFull
		}
	}
	if roll {
		if err := o.roll(); err != nil {
			return 0, err
		}
	}
	o.makeRoom(size, now)
	s, seq := o.active, o.nextSeq
	o.buf = appendRecord(o.buf[:0], seq, now.UnixNano(), data)
	if _, err := s.f.WriteAt(o.buf, s.size); err != nil {
		// Give back what reached the file (else it would be cut at the next Init) and seal the
		// segment, so that it can be deleted once delivered.
		s.f.Truncate(s.size)
		o.seal(s)
		return 0, err
	}
	s.note(seq, s.size, s.size+size, now.UnixNano())
	o.bytes += size
	o.nextSeq++
	o.written = seq
	return seq, nil
}

// roll seals the active segment and starts a new one.
func (o *Outbox) roll() error {
	if o.active != nil {
		if err := o.seal(o.active); err != nil {
			return err
		}
	}
	s, err := createSegment(o.Dir, o.nextSeq, o.Fsync != FsyncNever)
	if err != nil {
		return err
	}
	o.segs = append(o.segs, s)
	o.active = s
	o.bytes += s.size
	return nil
}

// seal ends appends to s, the active segment, syncing it unless FsyncNever; an empty segment is
// removed.
func (o *Outbox) seal(s *segment) error {
	s.sealed = true
	o.active = nil
	if s.count() == 0 {
		o.remove(s)
		return nil
	}
	if o.Fsync == FsyncNever {
		return nil
	}
	if err := s.f.Sync(); err != nil {
		return err
	}
	o.stats.Syncs++
	storeMax(&o.synced, s.last)
	return nil
}

// unref releases a reference to s taken under the mutex, closing its file when s is gone.
func (o *Outbox) unref(s *segment) {
	s.refs--
	if s.refs == 0 && (s.removed || o.closed) {
		s.f.Close()
	}
}

// FirstSeq returns the sequence number of the oldest retained record (the next one to be
// appended when the log is empty).
func (o *Outbox) FirstSeq() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.firstSeq()
}

func (o *Outbox) firstSeq() uint64 {
	for _, s := range o.segs {
		if s.count() > 0 {
			return s.base
		}
	}
	return o.nextSeq
}

// Stats returns a snapshot of the outbox.
func (o *Outbox) Stats() Stats {
	o.mu.Lock()
	defer o.mu.Unlock()
	st := o.stats
	st.Segments = len(o.segs)
	st.Bytes = o.bytes
	for _, s := range o.segs {
		st.Records += s.count()
	}
	st.FirstSeq = o.firstSeq()
	st.NextSeq = o.nextSeq
	return st
}

// Close persists the cursors of open consumers, syncs the log (unless FsyncNever) and releases
// the directory. Blocked reads return ErrClosed. It returns the first error met.
func (o *Outbox) Close() error {
	o.mu.Lock()
	if o.closing {
		o.mu.Unlock()
		return ErrClosed
	}
	o.closing = true
	var open []*Consumer
	for _, c := range o.consumers {
		if c.open {
			open = append(open, c)
		}
	}
	o.mu.Unlock()
	var err error
	for _, c := range open {
		if ferr := c.Flush(); err == nil && ferr != nil && !errors.Is(ferr, ErrClosed) {
			err = ferr
		}
	}
	if serr := o.Sync(); err == nil {
		err = serr
	}
	o.mu.Lock()
	o.closed = true
	close(o.done)
	o.syncTimer.Stop()
	o.ageTimer.Stop()
	for _, c := range o.consumers {
		if c.flushTimer != nil {
			c.flushTimer.Stop()
		}
	}
	o.closeFiles()
	o.mu.Unlock()
	if cerr := o.lockFile.Close(); err == nil {
		err = cerr
	}
	return err
}

// closeFiles closes every segment file no reader holds.
func (o *Outbox) closeFiles() {
	for _, s := range o.segs {
		if s.refs == 0 {
			s.f.Close()
		}
	}
}
