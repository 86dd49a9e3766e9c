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
	// is no consumer).
	Dropped [NumReasons]uint64
	// Truncations and TruncatedBytes count the segments cut at Init (torn or corrupt tails).
	Truncations    int
	TruncatedBytes int64
}

// ConsumerStats is a snapshot of a consumer.
type ConsumerStats struct {
	Acked     uint64 // last sequence number acknowledged
	Persisted uint64 // last sequence number in the cursor file
	// Records and Bytes are the undelivered (unacknowledged) records retained and their
	// encoded size.
	Records uint64
	Bytes   int64
	// Oldest is the append time of the oldest undelivered record (zero when none).
	Oldest time.Time
	// Dropped counts, by reason, records dropped since Init before this consumer read them.
	Dropped [NumReasons]uint64
}
