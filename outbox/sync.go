package outbox

import (
	"errors"
	"os"
	"sync/atomic"
)

// FsyncPolicy is when appended records are fsynced.
type FsyncPolicy uint8

// Fsync policies.
const (
	// FsyncInterval (the default): Append returns after the write; records are fsynced within
	// FsyncEvery (group commit) and by Sync.
	FsyncInterval FsyncPolicy = iota
	// FsyncAlways: Append returns after its record is fsynced; concurrent appends share fsyncs.
	FsyncAlways
	// FsyncNever: no fsync at all, Sync included (tests, or data that may be lost).
	FsyncNever
)

// Sync returns once every record appended before it is durable (a no-op under FsyncNever).
func (o *Outbox) Sync() error {
	if o.Fsync == FsyncNever {
		return nil
	}
	o.mu.Lock()
	target := o.written
	o.mu.Unlock()
	return o.syncTo(target)
}

// syncTo fsyncs the active segment unless seq is durable already; callers waiting on the same
// fsync share it.
func (o *Outbox) syncTo(seq uint64) error {
	if o.synced.Load() >= seq {
		return nil
	}
	o.syncMu.Lock()
	defer o.syncMu.Unlock()
	if o.synced.Load() >= seq {
		return nil
	}
	o.mu.Lock()
	target, s := o.written, o.active
	o.syncPending = false
	if s == nil || s.count() == 0 || o.synced.Load() >= s.last {
		// Every written record is in a sealed (synced) segment.
		o.mu.Unlock()
		storeMax(&o.synced, target)
		return nil
	}
	s.refs++
	o.mu.Unlock()
	err := s.f.Sync()
	o.mu.Lock()
	o.unref(s)
	if err == nil {
		o.stats.Syncs++
	}
	o.mu.Unlock()
	if err != nil {
		return err
	}
	storeMax(&o.synced, target)
	return nil
}

func (o *Outbox) backgroundSync() {
	if err := o.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		o.Logger.Error("outbox: fsync failed", "dir", o.Dir, "error", err)
	}
}

func storeMax(v *atomic.Uint64, x uint64) {
	for {
		old := v.Load()
		if old >= x || v.CompareAndSwap(old, x) {
			return
		}
	}
}
