package h26x

import (
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"

	"github.com/vinfer/vinfer/media"
)

// DTS derives decoding timestamps from presentation timestamps for transports that carry only
// the latter (RTP), with mediacommon's picture-order-count based extractors. When they cannot
// tell (no SPS yet, an unsupported POC type, a broken stream) it falls back to the PTS, clamped
// so that the DTS never goes backwards. The zero value is not ready: set Codec.
type DTS struct {
	// Codec is H.264 or H.265.
	Codec media.Codec

	h264 *h264.DTSExtractor
	h265 *h265.DTSExtractor
	last int64
	have bool
}

// Reset forgets the stream state; call it where decoding restarts (after loss, at a reconnect).
func (d *DTS) Reset() {
	d.h264, d.h265, d.have = nil, nil, false
}

// Next returns the DTS of the access unit made of nalus with presentation time pts (both in
// 90 kHz ticks). Access units must come in decoding order, starting at a key frame.
func (d *DTS) Next(nalus [][]byte, pts int64) int64 {
	var dts int64
	var err error
	switch d.Codec {
	case media.CodecH264:
		if d.h264 == nil {
			d.h264 = &h264.DTSExtractor{}
			d.h264.Initialize()
		}
		dts, err = d.h264.Extract(nalus, pts)
	case media.CodecH265:
		if d.h265 == nil {
			d.h265 = &h265.DTSExtractor{}
			d.h265.Initialize()
		}
		dts, err = d.h265.Extract(nalus, pts)
	default:
		dts = pts
	}
	if err != nil {
		// the extractor's state is unreliable now; start it over at the next call
		d.h264, d.h265 = nil, nil
		dts = pts
	}
	if d.have && dts < d.last {
		dts = d.last
	}
	d.last, d.have = dts, true
	return dts
}
