package gb28181

import (
	"sync"
	"time"

	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/gb28181/ps"
	"github.com/vinfer/vinfer/source/live"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/timestamp"
)

// mask33 keeps the 33 bits of an MPEG timestamp.
const mask33 = 1<<33 - 1

// psDepacketizer turns the RTP packets of a GB28181 stream (MPEG-PS payload, GB/T 28181-2016
// Annex C) into access units. It implements rtp.Handler.
//
// The program stream of one frame is carried by RTP packets of one timestamp, the last with
// the marker bit: at the marker (or when the timestamp changes, for senders that do not set it)
// the Demuxer is flushed and the frame delivered at once. Loss degrades, it does not stop, as
// in rtp.Depacketizer: a frame that lost packets is delivered cut at its first gap
// (ps.Demuxer.Cut; counted as Damaged) and the decoder conceals the rest; decoding starts,
// and resumes after a restart or a full queue, at a key frame. A frame whose timestamp (PES
// PTS, else RTP) is an outlier, and with B-frames those after a jump up to the next key
// frame, are delivered with media.AccessUnit.Discard: decoded as a reference, not shown, so
// that decoded PTS never go back (timestamp.Order).
type psDepacketizer struct {
	clock   *timestamp.Clock
	wall    *timestamp.Wallclock
	stats   *live.Counters
	deliver func(*media.AccessUnit) bool

	demux ps.Demuxer
	b     h26x.Builder
	dts   h26x.DTS

	inFrame     bool
	ts          uint32 // RTP timestamp of the frame in progress
	arrival     time.Time
	damaged     bool // the frame in progress lost packets: the rest of it is skipped
	cutting     bool // the frame being delivered was cut at a gap
	stamped     bool // the frame in progress went through stamp
	lossPending bool
	waitKey     bool
	order       timestamp.Order // which frames are not shown (Discard)
	disc        bool
	started     bool
	offset      uint32 // PES PTS - RTP timestamp, to stamp frames without PTS
	haveOffset  bool
	spsSeen     []byte
	infoMu      sync.Mutex
	info        media.StreamInfo
	// decodeOrder: a frame came without PES PTS, stamped by its RTP timestamp, which follows
	// decoding order (Info: PTSInDecodeOrder, so that the decoder re-stamps B-frames); sticky.
	decodeOrder bool
	au          media.AccessUnit
}

func (p *psDepacketizer) init() {
	p.demux.OnFrame = p.frame
	p.waitKey = true
}

// Push implements rtp.Handler.
func (p *psDepacketizer) Push(pkt *pionrtp.Packet, arrival time.Time) {
	newFrame := !p.inFrame || pkt.Timestamp != p.ts
	if p.lossPending {
		// Lost packets between two of one timestamp were that frame's: it is cut at the gap
		// (what arrived is delivered, counted as damaged) and its later packets are skipped.
		// Lost packets before a new timestamp were the tail of the last frame (cut there) or
		// the head of the new one, which then lacks its pack header: the demuxer skips it up
		// to the next one.
		p.lossPending = false
		if p.inFrame && !p.damaged {
			p.cut()
		}
		if newFrame {
			p.demux.Reset()
		}
	}
	if p.inFrame && newFrame {
		p.endFrame()
	}
	if newFrame {
		p.inFrame, p.ts, p.arrival, p.damaged, p.stamped = true, pkt.Timestamp, arrival, false, false
	}
	if !p.damaged {
		p.demux.Write(pkt.Payload)
	}
	if pkt.Marker {
		p.endFrame()
	}
}

// cut delivers what arrived of the frame in progress, damaged, and skips the rest of it.
func (p *psDepacketizer) cut() {
	p.damaged, p.cutting = true, true
	p.demux.Cut()
	p.cutting = false
}

func (p *psDepacketizer) endFrame() {
	if !p.damaged {
		p.demux.Flush()
	}
	if !p.stamped {
		p.stamp(nil) // keep the clock on the stream's timeline
	}
	p.inFrame, p.damaged = false, false
}

// stamp returns the presentation time of the frame in progress: its PES PTS when f has one,
// else its RTP timestamp moved by the last known difference between the two. Every frame,
// delivered or not, goes through it, so the clock follows the stream. ev tells an outlier
// (its PTS is a guess from the arrival time, and the difference is not learnt from it) or a
// jump.
func (p *psDepacketizer) stamp(f *ps.Frame) (pts time.Duration, ev timestamp.Event) {
	p.stamped = true
	ts := p.ts
	switch {
	case f != nil && f.HasPTS:
		ts = uint32(f.PTS)
	case p.haveOffset:
		ts = p.ts + p.offset
	}
	pts, ev = p.clock.Convert(ts, p.arrival)
	switch ev {
	case timestamp.EventOutlier:
		p.stats.TimestampOutliers.Add(1)
	case timestamp.EventJump:
		p.stats.TimestampJumps.Add(1)
	}
	if f != nil && f.HasPTS && ev != timestamp.EventOutlier {
		p.offset, p.haveOffset = ts-p.ts, true
	}
	return pts, ev
}

// Loss implements rtp.Handler. Loss degrades, it does not stop: delivery goes on (Push).
func (p *psDepacketizer) Loss() {
	p.lossPending = true
}

// Restart implements rtp.Handler.
func (p *psDepacketizer) Restart() {
	p.demux.Reset()
	p.b.Reset()
	p.inFrame, p.damaged, p.lossPending, p.cutting = false, false, false, false
	p.waitKey = true
	p.disc = p.started
	p.haveOffset = false
	p.dts.Reset()
	p.clock.Restart()
}

// frame receives a demuxed video frame.
func (p *psDepacketizer) frame(f *ps.Frame) {
	if f.Codec == media.CodecUnknown {
		p.stats.Dropped.Add(1) // no stream map and no parameter set yet: wait for a key frame
		return
	}
	if f.Codec != p.b.Codec {
		p.b = h26x.Builder{Codec: f.Codec}
		p.dts = h26x.DTS{Codec: f.Codec}
		p.spsSeen = nil
		p.waitKey = true
	}
	for b := f.Data; len(b) > 0; {
		var n []byte
		n, b = h26x.NextNALU(b)
		p.b.Add(n)
	}
	u, ok := p.b.Finish()
	if !ok {
		return
	}
	pts, ev := p.stamp(f)
	discard := p.order.Discard(p.clock, ev, u.Key)
	if (p.waitKey && !u.Key) || u.MissingParams {
		p.stats.Dropped.Add(1)
		return
	}
	if u.Key {
		p.updateInfo(f.Codec)
	}
	if !f.HasPTS && !p.decodeOrder { // before the first delivery: the pipeline's decoder is made then
		p.infoMu.Lock()
		p.decodeOrder = true
		p.infoMu.Unlock()
	}
	if p.waitKey {
		p.dts.Reset()
	}
	var dts time.Duration
	if f.HasPTS && f.HasDTS {
		dts = pts - timestamp.Duration((f.PTS-f.DTS)&mask33, rtp.ClockRate)
	} else {
		dts = pts - timestamp.Duration(p.clock.Ticks()-p.dts.Next(u.NALUs, p.clock.Ticks()), rtp.ClockRate)
	}
	// an outlier's PTS is a guess (stamp), and after a jump pictures of both timelines are in
	// the decoder: among B-frames they would come out of order, so those are decoded for
	// reference only, as in rtp.Depacketizer (timestamp.Order)
	p.au = media.AccessUnit{Codec: f.Codec, Data: u.Data, PTS: pts, DTS: dts, Key: u.Key, Discontinuity: p.disc, Discard: discard}
	if p.wall != nil {
		p.au.Wallclock, _ = p.wall.At(p.ts)
	}
	if !p.deliver(&p.au) {
		p.stats.Overflow.Add(1)
		p.waitKey, p.disc = true, true
		return
	}
	p.stats.CountDelivered(u.Key, u.Inserted, p.disc)
	if p.cutting {
		p.stats.Damaged.Add(1)
	}
	p.waitKey, p.disc, p.started = false, false, true
}

func (p *psDepacketizer) updateInfo(codec media.Codec) {
	sps := p.b.ParamSet(h26x.KindSPS)
	if sps == nil || (p.spsSeen != nil && &sps[0] == &p.spsSeen[0]) {
		return
	}
	p.spsSeen = sps
	info, err := h26x.StreamInfo(codec, sps)
	if err != nil {
		return
	}
	p.infoMu.Lock()
	p.info = info
	p.infoMu.Unlock()
}

// Info returns what is known of the stream. Safe for concurrent use.
func (p *psDepacketizer) Info() media.StreamInfo {
	p.infoMu.Lock()
	defer p.infoMu.Unlock()
	info := p.info
	info.PTSInDecodeOrder = p.decodeOrder
	return info
}
