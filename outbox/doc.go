// Package outbox is a durable, append-only log of opaque records with a persistent cursor per
// consumer, the store behind at-least-once event delivery.
//
// # Directory
//
// Dir holds segment files named after the sequence number of their first record
// (%020d.seg, so names sort in log order), one cursor file per consumer (<name>.cursor) and a
// LOCK file (flock: one process per directory, else ErrLocked).
//
// # Segment format
//
// All integers little endian. A segment starts with a 16-byte header:
//
//	[0:4]   magic "VOBS"
//	[4:8]   format version, 1
//	[8:16]  sequence number of the segment's first record (as in the file name)
//
// followed by records, each a 24-byte header and its payload:
//
//	[0:4]   payload length n, at most MaxRecordLimit
//	[4:12]  sequence number: the previous record's plus one
//	[12:20] append time, Unix nanoseconds
//	[20:24] CRC-32C (Castagnoli) of bytes [0:20] and the payload
//	[24:24+n] payload
//
// A segment holds consecutive sequence numbers; there are gaps only between segments (segments
// dropped by the bounds). At most SegmentSize bytes per segment, unless one record alone is
// larger.
//
// # Recovery
//
// Init scans every segment. A segment is cut at its first record that is incomplete (a torn
// write) or fails its checksum, length bound or sequence check; the cut is logged and counted
// (Stats.Truncations, Stats.TruncatedBytes) and the records before it are kept. A segment with a
// bad header or no record left is removed.
//
// # Guarantees
//
// A record is durable once Append returns (FsyncAlways), once a Sync that began after its Append
// returns (FsyncInterval, which also syncs every FsyncEvery), or never (FsyncNever). Records are
// read in sequence order. A consumer sees every record after its cursor unless the bounds
// dropped it before the consumer read it (counted by Reason). The cursor is persisted
// atomically (temporary file, fsync, rename, directory fsync) at most CursorEvery after Ack;
// after a crash a consumer resumes after its last persisted cursor, so records acknowledged
// in that window are read again: duplicates happen only across crashes and consumers drop
// them by the event id each record carries. Sequence numbers are never reused for a consumer: after a crash the next
// number is above every persisted cursor.
//
// A segment is deleted once every known consumer (one with a cursor file, open or not) has
// persisted a cursor at or past its last record; RemoveConsumer forgets a consumer.
//
// # Bounds
//
// MaxBytes bounds the bytes of all segments, MaxAge the age of records. Both drop whole
// segments, oldest first: a segment expires when its newest record is older than MaxAge. When an
// Append would exceed MaxBytes, DropOldest (the default) drops the oldest segments, Reject
// refuses the record with ErrFull. Every drop is counted per Reason, in Stats and per consumer,
// and logged once per episode (a run of drops of one reason with less than a minute between
// them).
//
// Per consumer a record is counted exactly once: acknowledged, dropped or pending
// (ConsumerStats.Records). A dropped segment counts as dropped the records the consumer had not
// read; a Read whose segment is dropped while it reads the file hands out none of them (it
// goes on at the next retained record). Records read and not acknowledged when their segment
// is dropped stay the reader's (ConsumerStats.Held, pending): acknowledged, they are delivered;
// given up by Rewind or Close, they are counted dropped then. A crash loses held records: the
// log no longer has them and the next process's counters start at zero.
package outbox
