package live

import "sync/atomic"

// Stats is a snapshot of the counters of one live source. Every field counts events since the
// source was created; fields that do not apply to a kind of source stay zero. The metrics
// exporter publishes them as counters labelled by stream name (never by URL: URLs can carry
// credentials).
type Stats struct {
	// Packets and Bytes count the RTP packets accepted for the stream (headers included).
	Packets, Bytes uint64
	// Lost counts RTP sequence numbers that never arrived (RFC 3550 §A.3).
	Lost uint64
	// Reordered counts packets that arrived out of order and were put back in order.
	Reordered uint64
	// Duplicates counts packets received twice; Late counts packets that arrived after the
	// reordering window had given up on them. Both are dropped.
	Duplicates, Late uint64
	// Resyncs counts sequence-number jumps too large to be loss (a sender that restarted with
	// the same SSRC): the stream restarts at the new number.
	Resyncs uint64
	// Garbage counts datagrams or TCP frames that are not RTP, or RTP of another payload type,
	// and were ignored.
	Garbage uint64
	// Foreign counts packets of another SSRC, or of the right SSRC from another sender address,
	// that were dropped; SSRCChanges counts how often the stream moved to a new SSRC or sender.
	Foreign, SSRCChanges uint64
	// DecodeErrors counts RTP payloads or PS packets that could not be parsed.
	DecodeErrors uint64
	// AccessUnits counts access units delivered by Read; KeyUnits those that are key frames.
	AccessUnits, KeyUnits uint64
	// Dropped counts access units discarded inside the source: damaged by loss, or not
	// decodable while waiting for the next key frame after loss or at the start.
	Dropped uint64
	// Overflow counts access units dropped because the reader did not keep up.
	Overflow uint64
	// PacketOverflow counts packets dropped before reordering because the source's goroutine
	// fell behind the socket (they count as Lost too).
	PacketOverflow uint64
	// Discontinuities counts access units delivered with media.AccessUnit.Discontinuity set.
	Discontinuities uint64
	// ParamSetsInserted counts key frames that got VPS/SPS/PPS inserted from the SDP or from
	// earlier in the stream.
	ParamSetsInserted uint64
	// TimestampJumps counts timestamps re-stamped because they broke the timeline.
	TimestampJumps uint64
	// SenderReports counts RTCP sender reports used for wall-clock time.
	SenderReports uint64
	// Connects counts sessions established (RTSP PLAY, TCP connections); Reconnects those after
	// the first; ConnectFailures the attempts that failed.
	Connects, Reconnects, ConnectFailures uint64
	// Watchdog counts sessions ended (or SSRC locks released) because no access unit arrived
	// within the watchdog period.
	Watchdog uint64
}

// Counters is the concurrency-safe, updatable form of Stats. The zero value is ready.
type Counters struct {
	Packets, Bytes        atomic.Uint64
	Lost                  atomic.Uint64
	Reordered             atomic.Uint64
	Duplicates, Late      atomic.Uint64
	Resyncs               atomic.Uint64
	Garbage               atomic.Uint64
	Foreign, SSRCChanges  atomic.Uint64
	DecodeErrors          atomic.Uint64
	AccessUnits, KeyUnits atomic.Uint64
	Dropped               atomic.Uint64
	Overflow              atomic.Uint64
	PacketOverflow        atomic.Uint64
	Discontinuities       atomic.Uint64
	ParamSetsInserted     atomic.Uint64
	TimestampJumps        atomic.Uint64
	SenderReports         atomic.Uint64
	Connects, Reconnects  atomic.Uint64
	ConnectFailures       atomic.Uint64
	Watchdog              atomic.Uint64
}

// CountDelivered counts one access unit handed to the reader: a key frame, one that got
// parameter sets inserted, one after a discontinuity.
func (c *Counters) CountDelivered(key, inserted, discontinuity bool) {
	c.AccessUnits.Add(1)
	if key {
		c.KeyUnits.Add(1)
	}
	if inserted {
		c.ParamSetsInserted.Add(1)
	}
	if discontinuity {
		c.Discontinuities.Add(1)
	}
}

// Snapshot returns the current values.
func (c *Counters) Snapshot() Stats {
	return Stats{
		Packets:           c.Packets.Load(),
		Bytes:             c.Bytes.Load(),
		Lost:              c.Lost.Load(),
		Reordered:         c.Reordered.Load(),
		Duplicates:        c.Duplicates.Load(),
		Late:              c.Late.Load(),
		Resyncs:           c.Resyncs.Load(),
		Garbage:           c.Garbage.Load(),
		Foreign:           c.Foreign.Load(),
		SSRCChanges:       c.SSRCChanges.Load(),
		DecodeErrors:      c.DecodeErrors.Load(),
		AccessUnits:       c.AccessUnits.Load(),
		KeyUnits:          c.KeyUnits.Load(),
		Dropped:           c.Dropped.Load(),
		Overflow:          c.Overflow.Load(),
		PacketOverflow:    c.PacketOverflow.Load(),
		Discontinuities:   c.Discontinuities.Load(),
		ParamSetsInserted: c.ParamSetsInserted.Load(),
		TimestampJumps:    c.TimestampJumps.Load(),
		SenderReports:     c.SenderReports.Load(),
		Connects:          c.Connects.Load(),
		Reconnects:        c.Reconnects.Load(),
		ConnectFailures:   c.ConnectFailures.Load(),
		Watchdog:          c.Watchdog.Load(),
	}
}
