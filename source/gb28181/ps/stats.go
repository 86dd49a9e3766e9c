package ps

import "sync/atomic"

// Stats is a snapshot of a Demuxer's counters. The first group counts what a well-formed stream
// is made of; the second counts vendor oddities that the Demuxer tolerated or dropped.
type Stats struct {
	// Packs, SystemHeaders and StreamMaps count pack headers (§2.5.3.3), system headers
	// (§2.5.3.5) and program stream maps (§2.5.4).
	Packs, SystemHeaders, StreamMaps uint64
	// VideoPES counts PES packets of the video stream; AudioPES audio PES packets (skipped);
	// OtherPES padding, private and other streams (skipped).
	VideoPES, AudioPES, OtherPES uint64
	// Frames counts video frames delivered.
	Frames uint64

	// NoStreamMap counts frames whose codec was probed from the NAL units because no program
	// stream map was seen.
	NoStreamMap uint64
	// StreamMapMismatch counts streams whose map named the other codec than the NAL units show
	// (the NAL units win).
	StreamMapMismatch uint64
	// PESWithoutPTS counts frames that started with a PES packet without PTS.
	PESWithoutPTS uint64
	// JunkBytes counts bytes skipped between packets (zero stuffing, garbage).
	JunkBytes uint64
	// PackStuffing counts pack headers with stuffing bytes.
	PackStuffing uint64
	// MPEG1 counts MPEG-1 (ISO/IEC 11172-1) pack or PES headers.
	MPEG1 uint64
	// UnboundedPES counts video PES packets with PES_packet_length 0, ended by the next start
	// code or the end of the frame.
	UnboundedPES uint64
	// EarlyFlush counts frame ends signalled by the transport while a PES packet was still
	// incomplete (ignored: the frame goes on).
	EarlyFlush uint64
	// SplitFrames counts frames that started with the PTS of the frame delivered just before
	// (a transport that signalled the end of a frame too early).
	SplitFrames uint64
	// Truncated counts frames dropped incomplete because of loss (Reset); Cut frames
	// delivered incomplete, cut at a gap (Cut).
	Truncated, Cut uint64
	// Invalid counts headers with impossible syntax or lengths, skipped.
	Invalid uint64
	// UnsupportedVideo counts PES packets of video streams that are neither H.264 nor H.265
	// (e.g. SVAC); ExtraVideo PES packets of a second video stream. Both are skipped.
	UnsupportedVideo, ExtraVideo uint64
	// Oversize counts frames dropped for exceeding Demuxer.MaxFrame.
	Oversize uint64
}

// counters is the concurrency-safe form of Stats.
type counters struct {
	packs, systemHeaders, streamMaps       atomic.Uint64
	videoPES, audioPES, otherPES           atomic.Uint64
	frames                                 atomic.Uint64
	noStreamMap, streamMapMismatch         atomic.Uint64
	pesWithoutPTS, junkBytes, packStuffing atomic.Uint64
	mpeg1, unboundedPES, earlyFlush        atomic.Uint64
	splitFrames, truncated, invalid, cut   atomic.Uint64
	unsupportedVideo, extraVideo, oversize atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Packs: c.packs.Load(), SystemHeaders: c.systemHeaders.Load(), StreamMaps: c.streamMaps.Load(),
		VideoPES: c.videoPES.Load(), AudioPES: c.audioPES.Load(), OtherPES: c.otherPES.Load(),
		Frames:      c.frames.Load(),
		NoStreamMap: c.noStreamMap.Load(), StreamMapMismatch: c.streamMapMismatch.Load(),
		PESWithoutPTS: c.pesWithoutPTS.Load(), JunkBytes: c.junkBytes.Load(), PackStuffing: c.packStuffing.Load(),
		MPEG1: c.mpeg1.Load(), UnboundedPES: c.unboundedPES.Load(), EarlyFlush: c.earlyFlush.Load(),
		SplitFrames: c.splitFrames.Load(), Truncated: c.truncated.Load(), Cut: c.cut.Load(), Invalid: c.invalid.Load(),
		UnsupportedVideo: c.unsupportedVideo.Load(), ExtraVideo: c.extraVideo.Load(), Oversize: c.oversize.Load(),
	}
}
