package rtp

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph265"
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
// sequence order. The payload formats are decoded by gortsplib's rtph264/rtph265; access-unit
// boundaries, loss handling, parameter sets and timing are done here:
//
//   - an access unit ends at the marker bit, or when the RTP timestamp changes (senders that
//     do not set the marker lose nothing but one packet of latency);
//   - after Loss, the access unit in progress (or the next one, when the loss fell between two)
//     is dropped, and so is every access unit up to the next key frame, which is delivered with
//     media.AccessUnit.Discontinuity set: the decoder never sees a damaged reference chain;
//   - key frames get the VPS/SPS/PPS they lack, from ParamSets (the SDP) or from earlier in the
//     stream; key frames for which none was ever seen are dropped;
//   - PTS comes from the RTP timestamp through Clock (wraparound, jump repair), DTS from the
//     picture order count, Wallclock from RTCP sender reports.
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

	dec interface {
		Decode(*pionrtp.Packet) ([][]byte, error)
	}
	more        error // the decoder's ErrMorePacketsNeeded
	noStart     error // the decoder's ErrNonStartingPacketAndNoPrevious
	b           h26x.Builder
	dts         h26x.DTS
	inAU        bool
	ts          uint32
	arrival     time.Time
	damaged     bool // the access unit in progress lost packets
	lossPending bool // Loss was called before the next packet
	waitKey     bool
	disc        bool
	started     bool // an access unit was delivered
	spsSeen     []byte
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
	d.newDecoder()
	d.waitKey = true
	return nil
}

func (d *Depacketizer) newDecoder() {
	switch d.Codec {
	case media.CodecH264:
		dec := &rtph264.Decoder{PacketizationMode: 1}
		_ = dec.Init() // cannot fail with mode 1; modes 0 and 1 are decoded alike
		d.dec, d.more, d.noStart = dec, rtph264.ErrMorePacketsNeeded, rtph264.ErrNonStartingPacketAndNoPrevious
	case media.CodecH265:
		dec := &rtph265.Decoder{}
		_ = dec.Init() // cannot fail without DON
		d.dec, d.more, d.noStart = dec, rtph265.ErrMorePacketsNeeded, rtph265.ErrNonStartingPacketAndNoPrevious
	}
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
	marker := pkt.Marker
	pkt.Marker = true // make the library hand out the NAL units of every packet at once
	nalus, err := d.dec.Decode(pkt)
	pkt.Marker = marker
	switch {
	case err == nil:
		for _, n := range nalus {
			d.b.Add(n)
		}
	case errors.Is(err, d.more):
		if marker { // a fragmented NAL unit that never ended
			d.damaged = true
			d.Stats.DecodeErrors.Add(1)
		}
	case errors.Is(err, d.noStart): // joined in the middle of a fragmented NAL unit
		d.damaged = true
	default:
		d.damaged = true
		d.Stats.DecodeErrors.Add(1)
	}
	if marker {
		d.finish()
	}
}

// Loss reports that packets are missing before the next one pushed.
func (d *Depacketizer) Loss() {
	d.lossPending = true
	d.waitKey = true
	d.disc = d.started
	d.newDecoder() // drop a half-received fragmented NAL unit
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
	d.newDecoder()
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
	// every access unit, delivered or not, keeps the clock on the stream's timeline
	pts, jumped := d.Clock.Convert(d.ts, d.arrival)
	if jumped {
		d.Stats.TimestampJumps.Add(1)
	}
	if d.damaged {
		d.damaged = false
		d.b.Reset()
		d.Stats.Dropped.Add(1)
		return
	}
	u, ok := d.b.Finish()
	if !ok {
		return // parameter sets or SEI alone: remembered, nothing to decode
	}
	if (d.waitKey && !u.Key) || u.MissingParams {
		d.Stats.Dropped.Add(1)
		return
	}
	if u.Key {
		d.updateInfo()
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
	d.waitKey, d.disc, d.started = false, false, true
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
