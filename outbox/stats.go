package outbox

import "time"

// Reason is why records were dropped.
type Reason uint8

// Drop reasons.
const (
	// ReasonFull: undelivered records dropped to make room (DropOldest).
	ReasonFull Reason = iota
	// ReasonAge: records older than MaxAge.
	ReasonAge
	// ReasonRejected: new records refused because the outbox was full (Reject).
	ReasonRejected
	// ReasonCorrupt: records behind a checksum failure found while reading.
	ReasonCorrupt
	// ReasonDiskFull: new records Append could not write for lack of space (ENOSPC, EDQUOT,
	// EFBIG).
	ReasonDiskFull
	// NumReasons is the number of reasons.
	NumReasons
)

func (r Reason) String() string {
	switch r {
	case ReasonFull:
		return "full"
	case ReasonAge:
		return "age"
	case ReasonRejected:
		return "rejected"
	case ReasonCorrupt:
		return "corrupt"
	case ReasonDiskFull:
		return "disk_full"
	}
	return "unknown"
}

// Stats is a snapshot of an Outbox.
type Stats struct {
	Segments int    // segment files
	Records  uint64 // records retained
	Bytes    int64  // bytes of all segment files
	FirstSeq uint64 // sequence number of the oldest retained record (NextSeq when none)
	NextSeq  uint64 // sequence number of the next record appended
	Appended uint64 // records appended since Init
	Syncs    uint64 // fsyncs of segment data since Init
	// Dropped counts records dropped since Init by reason: a dropped segment counts the
	// records some known consumer had neither read nor acknowledged (all of them when there
	// is no consumer). Records a reader gives up later (ConsumerStats.Held at Rewind or
	// Close) count in that consumer's Dropped only.
	Dropped [NumReasons]uint64
	// DiskFullSince is when Append last found no space to write a record, and every Append
	// since failed for lack of space; zero while records are written.
	DiskFullSince time.Time
	// Truncations and TruncatedBytes count the segments cut at Init (torn or corrupt tails).
	Truncations    int
	TruncatedBytes int64
}

// ConsumerStats is a snapshot of a consumer.
type ConsumerStats struct {
	Acked     uint64 // last sequence number acknowledged
	Persisted uint64 // last sequence number in the cursor file
	// Records are the records pending for this consumer: neither acknowledged nor counted
	// dropped. They are the retained records after the cursor plus Held. Bytes is the
	// encoded size of the retained ones.
	Records uint64
	Bytes   int64
	// Held counts the records read and not acknowledged whose segment the bounds dropped
	// since: the reader still has them (pending); acknowledged they leave Records, given up
	// (Rewind, Close) they are counted in Dropped.
	Held uint64
	// Oldest is the append time of the oldest pending record (zero when none; for held
	// records partly acknowledged, that of the first record of their run).
	Oldest time.Time
	// Dropped counts, by reason, records dropped since Init that this consumer did not
	// have: dropped before it read them, or held and given up. For a consumer that existed
	// when the outbox was empty, acknowledged + Dropped + Records = appended.
	Dropped [NumReasons]uint64
}
