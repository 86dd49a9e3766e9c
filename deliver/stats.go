package deliver

import (
	"time"

	"github.com/vinfer/vinfer/outbox"
)

// Stats is a snapshot of a Worker's counters (since Init) and of its sink's outbox backlog.
type Stats struct {
	// Up is false from a failed Publish until the next successful one; DownSince is when it
	// went down and LastError the latest failure.
	Up        bool
	DownSince time.Time
	LastError string
	// DiskFullSince is when the sink's outbox found its file system full: new records are
	// dropped (Dropped[outbox.ReasonDiskFull]) until one is written again; zero meanwhile.
	DiskFullSince time.Time
	// Delivered counts records the Publisher acknowledged.
	Delivered uint64
	// Retried counts records published again after a failed attempt.
	Retried uint64
	// Failed counts Publish calls that returned an error.
	Failed uint64
	// Undeliverable counts records skipped as ErrUndeliverable.
	Undeliverable uint64
	// Dropped counts, by reason, records the outbox dropped before the sink had them.
	Dropped [outbox.NumReasons]uint64
	// Depth is the records pending for the sink: retained in the outbox after its cursor,
	// plus those it holds in memory (read, being published) whose segment the outbox
	// dropped meanwhile. DepthBytes is the retained ones' size on disk; OldestAge is the age
	// of the oldest pending record (0 when none). For a sink that existed when the outbox was
	// empty, Delivered + Undeliverable + Dropped (all reasons) + Depth = records appended
	// since Init.
	Depth      uint64
	DepthBytes int64
	OldestAge  time.Duration
}
