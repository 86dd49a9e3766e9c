package rtp

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/timestamp"
)

// ClockRate is the RTP clock rate of H.264 and H.265 (RFC 6184 §8.2.1, RFC 7798 §7.1).
const ClockRate = 90000

// Depacketizer assembles the access units of one H.264 (RFC 6184: single NAL unit, STAP-A,
// FU-A) or H.265 (RFC 7798: single NAL unit, AP, FU) RTP stream from packets handed over in
// sequence order (unpacker), and does access-unit boundaries, loss handling, parameter sets
// and timing:
//
//   - an access unit ends at the marker bit, or when the RTP timestamp changes (senders that
//     do not set the marker lose nothing but one packet of latency);
//   - loss degrades, it does not stop the stream: an access unit that lost packets is still
//     delivered with the NAL units that arrived (a fragmented slice truncated at its first
//     gap, RFC 6184 §5.8), and counted as Damaged; the decoder conceals what is missing, as
//     FFmpeg does. Decoding starts (and resumes after a reconnect or a full queue) at a key
//     frame, even a damaged one, delivered with media.AccessUnit.Discontinuity after a gap;
//   - key frames get the VPS/SPS/PPS they lack, from ParamSets (the SDP) or from earlier in the
//     stream; key frames for which none was ever seen are dropped;
//   - PTS comes from the RTP timestamp through Clock (wraparound, outliers, jump repair), DTS
//     from the picture order count, Wallclock from RTCP sender reports. An outlier's access
//     unit, and with B-frames those after a jump up to the next key frame, are delivered
//     with media.AccessUnit.Discard: decoded as a reference, not shown, so that the decoded
//     pictures' PTS never go back (timestamp.Order).
//
// The zero value is not ready: set the fields and call Init. Not safe for concurrent use.
type Depacketizer struct {
	// Codec is media.CodecH264 or media.CodecH265.
	Codec media.Codec
	// ParamSets are out-of-band parameter sets (NAL units without start codes), e.g. from the
	// SDP's sprop-parameter-sets or sprop-vps/sps/pps; empty when the SDP has none.
	ParamSets [][]byte
	// Clock maps RTP timestamps to PTS; nil for a private one. Share one across reconnects so
	// that PTS stays monotonic.
	Clock *timestamp.Clock
	// Wallclock maps RTP timestamps to capture time; nil when the stream has no RTCP.
	Wallclock *timestamp.Wallclock
	// Stats receives AccessUnits, KeyUnits, Dropped, Overflow, Discontinuities,
	// ParamSetsInserted, TimestampJumps and DecodeErrors; nil for private counters.
	Stats *live.Counters
	// OnAccessUnit receives each complete access unit, valid during the call only. It returns
	// false when it could not take it (a full queue): the depacketizer then resumes at the next
	// key frame.
	OnAccessUnit func(au *media.AccessUnit) bool
	// Health receives hints at what keeps the stream from decoding (wrong codec, no parameter
	// sets); nil for none.
	Health *live.Health
	// Logger receives timestamp outliers and jumps; nil means slog.Default().
	Logger *slog.Logger

	unpack      unpacker
	b           h26x.Builder
	dts         h26x.DTS
	inAU        bool
	ts          uint32
	arrival     time.Time
	damaged     bool // the access unit in progress lost packets
	lossPending bool // Loss was called before the next packet
	waitKey     bool
	order       timestamp.Order // which access units are not shown (Discard)
	disc        bool
	started     bool // an access unit was delivered
	spsSeen     []byte
	hinted      bool      // a hint was given to Health
	otherCodec  int       // payloads that look like the other codec
	outlierLog  time.Time // when an outlier was logged last
	infoMu      sync.Mutex
	info        media.StreamInfo
	au          media.AccessUnit
}

// Init checks the configuration. It returns an error for a codec other than H.264 or H.265.
func (d *Depacketizer) Init() error {
	if d.Codec != media.CodecH264 && d.Codec != media.CodecH265 {
		return fmt.Errorf("rtp: codec %v is not supported; vinfer decodes H.264 and H.265", d.Codec)
	}
	if d.OnAccessUnit == nil {
		return errors.New("rtp: Depacketizer.OnAccessUnit is nil")
	}
	if d.Stats == nil {
		d.Stats = new(live.Counters)
	}
	if d.Health == nil {
		d.Health = new(live.Health)
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Clock == nil {
		d.Clock = &timestamp.Clock{Rate: ClockRate}
		if err := d.Clock.Init(); err != nil {
			return err
		}
	}
	d.b = h26x.Builder{Codec: d.Codec}
	for _, ps := range d.ParamSets {
		d.b.SetParamSet(ps)
	}
	d.dts = h26x.DTS{Codec: d.Codec}
	d.info = media.StreamInfo{Codec: d.Codec}
	d.updateInfo()
	d.unpack = unpacker{codec: d.Codec}
	d.waitKey = true
	return nil
}

// Push hands over the next packet in sequence order, received at arrival. The packet is not
// kept: its payload may be reused when Push returns.
func (d *Depacketizer) Push(pkt *pionrtp.Packet, arrival time.Time) {
	newAU := !d.inAU || pkt.Timestamp != d.ts
	damageNew := false
	if d.lossPending {
		// Lost packets between two of the same timestamp belonged to that access unit; lost
		// packets before a new timestamp may have been the tail of the last access unit or
		// the head of the new one: both are suspect.
		d.lossPending = false
		d.damaged = d.damaged || d.inAU
		damageNew = newAU
	}
	if d.inAU && newAU {
		d.finish() // the marker was lost, or the sender does not set it
	}
	if !d.inAU {
		d.inAU, d.ts, d.arrival = true, pkt.Timestamp, arrival
		d.damaged = damageNew
	}
	d.checkCodec(pkt.Payload)
	nalus, truncated, err := d.unpack.push(pkt.Payload)
	for _, n := range nalus {
		d.b.Add(n)
	}
	if truncated > 0 || err != nil {
		d.damaged = true
	}
	if err != nil && !errors.Is(err, ErrPayloadTruncated) {
		d.Stats.DecodeErrors.Add(1)
	}
	if pkt.Marker {
		d.finish()
	}
}

// Loss reports that packets are missing before the next one pushed.
func (d *Depacketizer) Loss() {
	d.lossPending = true
	d.unpack.lost()
}

// Restart starts a new session (reconnect, new SSRC): the access unit in progress is dropped,
// timestamps start a new timeline that continues the old one, and delivery resumes at the next
// key frame.
func (d *Depacketizer) Restart() {
	if d.inAU && d.b.Len() > 0 {
		d.Stats.Dropped.Add(1)
	}
	d.b.Reset()
	d.inAU, d.damaged, d.lossPending = false, false, false
	d.waitKey = true
	d.disc = d.started
	d.unpack.reset()
	d.dts.Reset()
	d.Clock.Restart()
}

// Info returns what is known of the stream: codec, and size and frame rate once an SPS was seen.
// Safe for concurrent use.
func (d *Depacketizer) Info() media.StreamInfo {
	d.infoMu.Lock()
	defer d.infoMu.Unlock()
	return d.info
}

func (d *Depacketizer) finish() {
	d.inAU = false
	if nalus, truncated := d.unpack.flush(); len(nalus) > 0 || truncated > 0 {
		for _, n := range nalus {
			d.b.Add(n)
		}
		d.damaged = true
	}
	// every access unit, delivered or not, keeps the clock on the stream's timeline
	pts, ev := d.Clock.Convert(d.ts, d.arrival)
	d.countClock(ev)
	damaged := d.damaged
	d.damaged = false
	u, ok := d.b.Finish()
	if !ok {
		if damaged {
			d.Stats.Dropped.Add(1) // nothing of the picture arrived
		}
		return // parameter sets or SEI alone: remembered, nothing to decode
	}
	if u.MissingParams {
		d.hint(missingParamsHint[d.Codec])
	}
	// an outlier's PTS is a guess from its arrival, and after a jump pictures of both timelines
	// are in the decoder: among B-frames they would come out of order, so those are decoded
	// for reference only and never shown (timestamp.Order)
	discard := d.order.Discard(d.Clock, ev, u.Key)
	if (d.waitKey && !u.Key) || u.MissingParams {
		d.Stats.Dropped.Add(1)
		return
	}
	if u.Key {
		d.updateInfo()
		if d.hinted {
			d.hint("")
		}
	}
	if d.waitKey {
		d.dts.Reset() // decoding restarts here
	}
	dts := d.dts.Next(u.NALUs, d.Clock.Ticks())
	d.au = media.AccessUnit{
		Codec:         d.Codec,
		Data:          u.Data,
		PTS:           pts,
		DTS:           pts - timestamp.Duration(d.Clock.Ticks()-dts, ClockRate),
		Key:           u.Key,
		Discontinuity: d.disc,
		Discard:       discard,
	}
	if d.Wallclock != nil {
		d.au.Wallclock, _ = d.Wallclock.At(d.ts)
	}
	if !d.OnAccessUnit(&d.au) {
		d.Stats.Overflow.Add(1)
		d.waitKey, d.disc = true, true
		return
	}
	d.Stats.CountDelivered(u.Key, u.Inserted, d.disc)
	if damaged {
		d.Stats.Damaged.Add(1)
	}
	d.waitKey, d.disc, d.started = false, false, true
}

var missingParamsHint = map[media.Codec]string{
	media.CodecH264: "key frames arrive without SPS/PPS: none in-band and none in the SDP (give sdp=, or make the camera repeat them)",
	media.CodecH265: "key frames arrive without VPS/SPS/PPS: none in-band and none in the SDP (give sdp=, or make the camera repeat them)",
}

func (d *Depacketizer) hint(h string) {
	d.Health.Hint(h)
	d.hinted = h != ""
}

// checkCodec watches for a stream of the other codec (H.265 sent to an H.264 port, or the
// reverse): before anything was delivered, 50 payloads that parse as the other codec's common NAL units gives a hint.
func (d *Depacketizer) checkCodec(p []byte) {
	if d.started || !looksLikeOtherCodec(d.Codec, p) {
		return
	}
	d.otherCodec++
	if d.otherCodec == 50 {
		other := media.CodecH265
		if d.Codec == media.CodecH265 {
			other = media.CodecH264
		}
		h := fmt.Sprintf("the payload looks like %v, the stream is configured for %v", other, d.Codec)
		d.Logger.Warn(h)
		d.hint(h)
	}
}

// countClock counts and logs what the clock made of a timestamp.
func (d *Depacketizer) countClock(ev timestamp.Event) {
	switch ev {
	case timestamp.EventOutlier:
		d.Stats.TimestampOutliers.Add(1)
		if now := time.Now(); now.Sub(d.outlierLog) >= time.Minute {
			d.outlierLog = now
			d.Logger.Warn("RTP timestamp far off the timeline: interpolated (logged once a minute)",
				"rtp_timestamp", d.ts, "outliers", d.Stats.TimestampOutliers.Load())
		}
	case timestamp.EventJump:
		d.Stats.TimestampJumps.Add(1)
		d.Logger.Warn("RTP timestamps jumped and stayed: the timeline re-anchored", "rtp_timestamp", d.ts,
			"jumps", d.Stats.TimestampJumps.Load())
	}
}

// updateInfo parses the SPS when it changed.
func (d *Depacketizer) updateInfo() {
	sps := d.b.ParamSet(h26x.KindSPS)
	if sps == nil || (d.spsSeen != nil && &sps[0] == &d.spsSeen[0]) {
		return // the Builder clones a changed SPS, so identity means unchanged
	}
	d.spsSeen = sps
	info, err := h26x.StreamInfo(d.Codec, sps)
	if err != nil {
		return
	}
	d.infoMu.Lock()
	d.info = info
	d.infoMu.Unlock()
}
