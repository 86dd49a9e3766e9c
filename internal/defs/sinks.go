package defs

import "time"

// Sinks lists the sinks that deliver through an outbox (MQTT, Kafka, NATS, webhook).
type Sinks interface {
	// Sinks returns a snapshot of each such sink, in configuration order.
	Sinks() []SinkInfo
}

// SinkInfo is a snapshot of one delivering sink: its counters since it opened and its outbox
// backlog.
type SinkInfo struct {
	// Name is the sink's name (its metrics label), Type its output.sinks[].type.
	Name, Type string
	// Up is false from a failed delivery attempt until the next successful one; LastError is
	// the latest failure (secrets never appear in it).
	Up        bool
	LastError string
	// Delivered counts records the broker acknowledged, Retried records sent again, Failed
	// failed attempts, Undeliverable records skipped as impossible to deliver.
	Delivered, Retried, Failed, Undeliverable uint64
	// Dropped counts records the outbox dropped before delivery, by reason (full, age,
	// rejected, corrupt, disk_full).
	Dropped map[string]uint64
	// DiskFullSince is when the outbox's file system filled up (new records are dropped,
	// disk_full, until one can be written again); zero while records are written.
	DiskFullSince time.Time
	// Depth and DepthBytes are the undelivered records and their bytes; OldestAge the age of
	// the oldest (0 when none).
	Depth      uint64
	DepthBytes int64
	OldestAge  time.Duration
}
