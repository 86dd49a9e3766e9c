package outbox

import "errors"

// Errors.
var (
	// ErrClosed is returned by every operation on a closed Outbox or Consumer.
	ErrClosed = errors.New("outbox: closed")
	// ErrFull is returned by Append when the record does not fit under MaxBytes and Full is
	// Reject.
	ErrFull = errors.New("outbox: full")
	// ErrDiskFull is returned by Append when its file system has no space left for the
	// record (it wraps the system's error: ENOSPC, EDQUOT or EFBIG); the record is counted
	// dropped (ReasonDiskFull).
	ErrDiskFull = errors.New("outbox: no space left for the record")
	// ErrCorrupt reports a record or file that fails its checks.
	ErrCorrupt = errors.New("outbox: corrupt data")
	// ErrTooLarge is returned by Append for a record above MaxRecordSize.
	ErrTooLarge = errors.New("outbox: record too large")
	// ErrLocked is returned by Init when another Outbox holds the directory.
	ErrLocked = errors.New("outbox: directory locked by another outbox")
	// ErrConsumerName is returned for a consumer name that is not 1 to 64 of [A-Za-z0-9_.-],
	// starting with a letter or digit.
	ErrConsumerName = errors.New("outbox: invalid consumer name")
	// ErrConsumerBusy is returned when a consumer is opened twice, or removed while open.
	ErrConsumerBusy = errors.New("outbox: consumer in use")
	// ErrAckAhead is returned by Ack for a sequence number the consumer has not read.
	ErrAckAhead = errors.New("outbox: ack beyond the records read")
)

// errTorn reports data that ends inside a record or header (a write cut short).
var errTorn = errors.New("outbox: torn record")
