package outbox

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// noSpace reports whether err is the file system's refusal to store more: no space left
// (ENOSPC), a quota (EDQUOT) or the file size limit (EFBIG, RLIMIT_FSIZE).
func noSpace(err error) bool {
	return err != nil && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		errors.Is(err, syscall.EFBIG))
}

// reclaim deletes the segments every consumer has persisted a cursor past and reports whether
// that freed any bytes. Called with o.mu held.
func (o *Outbox) reclaim() bool {
	before := o.bytes
	o.collect()
	return o.bytes < before
}

// diskFull counts a record Append could not write for lack of space as dropped for every
// consumer, logs the start of a disk-full episode and returns ErrDiskFull wrapping err. Called
// with o.mu held.
func (o *Outbox) diskFull(err error, now time.Time) error {
	for _, c := range o.consumers {
		c.dropped[ReasonDiskFull]++
	}
	o.stats.Dropped[ReasonDiskFull]++
	if o.stats.DiskFullSince.IsZero() {
		o.stats.DiskFullSince = now
		o.fullFrom = o.stats.Dropped[ReasonDiskFull] - 1
		o.Logger.Error("outbox: disk full, dropping new records until there is space", "dir", o.Dir,
			"error", err)
	}
	return fmt.Errorf("%w: %w", ErrDiskFull, err)
}

// writable ends a disk-full episode: a record was written. Called with o.mu held.
func (o *Outbox) writable(now time.Time) {
	if since := o.stats.DiskFullSince; !since.IsZero() {
		o.Logger.Info("outbox: writing records again", "dir", o.Dir,
			"full_for", now.Sub(since).Round(time.Millisecond),
			"dropped", o.stats.Dropped[ReasonDiskFull]-o.fullFrom)
		o.stats.DiskFullSince = time.Time{}
	}
}
