// Package media holds the coded-video types every stage agrees on: the codec of an elementary
// stream and the access unit, the unit a source hands to a decoder.
package media

import (
	"fmt"
	"time"
)

// Codec identifies a video coding format.
type Codec uint8

// Video codecs vinfer decodes.
const (
	CodecUnknown Codec = iota
	CodecH264          // ITU-T H.264 / ISO/IEC 14496-10 (AVC)
	CodecH265          // ITU-T H.265 / ISO/IEC 23008-2 (HEVC)
)

// String returns the codec's common name ("h264", "h265").
func (c Codec) String() string {
	switch c {
	case CodecH264:
		return "h264"
	case CodecH265:
		return "h265"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

// AccessUnit is one coded picture: every NAL unit of one frame, in Annex-B byte-stream format
// (ITU-T H.264 Annex B: each NAL unit preceded by a 00 00 00 01 start code). Parameter sets
// (VPS/SPS/PPS) travel in-band before key frames, so a decoder needs no out-of-band extradata.
type AccessUnit struct {
	Codec Codec
	// Data is borrowed: valid until the producer's next Read; copy it to keep it.
	Data []byte
	// PTS is the presentation time since the start of the stream (monotonic per stream).
	PTS time.Duration
	// DTS is the decoding time on the same clock as PTS.
	DTS time.Duration
	// Key reports an IDR/IRAP picture: decoding can start here.
	Key bool
	// Discard marks a picture to decode for reference only, never to output (MP4 edit-list
	// pre-roll, ISO/IEC 14496-12 §8.6.6).
	Discard bool
	// Wallclock is the capture time when the source knows it (RTCP sender reports), else zero.
	Wallclock time.Time
	// Discontinuity reports that the source lost data just before this access unit (packet
	// loss, reconnect, sender restart) and dropped what could not be decoded: this unit is a
	// key frame that decoding resumes from, and PTS may have jumped forward.
	Discontinuity bool
}

// StreamInfo describes the video elementary stream of a source.
type StreamInfo struct {
	Codec Codec
	// Width and Height in pixels; 0 when unknown before the first parameter sets.
	Width, Height int
	// FrameRate in frames per second; 0 when unknown.
	FrameRate float64
	// Frames is the container's frame count for finite sources; 0 when unknown.
	Frames int64
	// Duration of a finite source; 0 when unknown.
	Duration time.Duration
	// PTSInDecodeOrder reports access units stamped by a frame count in decoding order, not
	// with presentation times (raw Annex-B streams carry none): with B-frames the decoder must
	// re-stamp its frames in presentation order (codec.Decoder.ReorderPTS).
	PTSInDecodeOrder bool
}
