package live

import (
	"sync/atomic"
	"time"
)

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
	// Watchdog counts sessions ended (or sender locks released) because no packet arrived
	// within the watchdog period.
	Watchdog uint64
	// Damaged counts access units delivered although packets of them were lost: the NAL units
	// that arrived (a fragmented slice up to its first gap) go to the decoder, which conceals
	// the rest, as FFmpeg does.
	Damaged uint64
	// TimestampOutliers counts timestamps far off the timeline that the ones after them did
	// not confirm: they were interpolated and the timeline kept (TimestampJumps counts the
	// confirmed jumps the timeline re-anchored on).
	TimestampOutliers uint64
	// SenderChanges counts takeovers by another sender address after the current one fell
	// silent (SSRCChanges counts new SSRCs); both are logged.
	SenderChanges uint64
	// Outages counts periods of the watchdog length or longer without a packet; OutageSeconds
	// sums their length (loss that sequence numbers cannot show).
	Outages       uint64
	OutageSeconds float64

	// State is the source's health: StateConnecting, StateWaitingKeyframe, StateRunning,
	// StateStalled or StateFailed ("" for sources that do not report one).
	State string
	// Reason says why the state is not running (the last error, what is missing); Hint names
	// the likely cause when the source can tell (payload looks like H.265, no SPS/PPS seen,
	// packets from an unknown SSRC).
	Reason, Hint string
	// LastError is the last error the source met (connection, DESCRIBE, parsing), with its time.
	LastError   string
	LastErrorAt time.Time `json:",omitzero"`
	// LastForeign describes the last packet from an unexpected SSRC or address
	// ("SSRC 0x… from host:port").
	LastForeign string
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
	Damaged               atomic.Uint64
	TimestampOutliers     atomic.Uint64
	SenderChanges         atomic.Uint64
	Outages               atomic.Uint64
	outageNanos           atomic.Int64
}

// AddOutage counts one silence of d.
func (c *Counters) AddOutage(d time.Duration) {
	c.Outages.Add(1)
	c.outageNanos.Add(int64(d))
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
		Damaged:           c.Damaged.Load(),
		TimestampOutliers: c.TimestampOutliers.Load(),
		SenderChanges:     c.SenderChanges.Load(),
		Outages:           c.Outages.Load(),
		OutageSeconds:     time.Duration(c.outageNanos.Load()).Seconds(),
	}
}
