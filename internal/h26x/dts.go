package h26x

import (
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h264"
	"github.com/bluenviron/mediacommon/v2/pkg/codecs/h265"

	"github.com/vinfer/vinfer/media"
)

// DTS derives decoding timestamps from presentation timestamps for transports that carry only
// the latter (RTP), with mediacommon's picture-order-count based extractors. Streams whose SPS
// rules out reordering (H.264 Baseline profile, max_num_reorder_frames or
// sps_max_num_reorder_pics 0) get DTS = PTS without parsing slices. When the extractors cannot
// tell (no SPS yet, an unsupported POC type, a broken stream) it falls back to the PTS, clamped
// so that the DTS never goes backwards. The zero value is not ready: set Codec.
type DTS struct {
	// Codec is H.264 or H.265.
	Codec media.Codec

	h264      *h264.DTSExtractor
	h265      *h265.DTSExtractor
	last      int64
	have      bool
	sps       []byte // the SPS noReorder was derived from
	noReorder bool
}

// Reset forgets the stream state; call it where decoding restarts (after loss, at a reconnect).
func (d *DTS) Reset() {
	d.h264, d.h265, d.have = nil, nil, false
}

// Next returns the DTS of the access unit made of nalus with presentation time pts (both in
// 90 kHz ticks). Access units must come in decoding order, starting at a key frame.
func (d *DTS) Next(nalus [][]byte, pts int64) int64 {
	for _, n := range nalus {
		if Classify(d.Codec, n) == KindSPS && (d.sps == nil || len(n) == 0 || &n[0] != &d.sps[0]) {
			d.sps, d.noReorder = n, noReorder(d.Codec, n)
		}
	}
	var dts int64
	var err error
	switch {
	case d.noReorder:
		dts = pts
	default:
		dts, err = d.extract(nalus, pts)
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

func (d *DTS) extract(nalus [][]byte, pts int64) (dts int64, err error) {
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
	return dts, err
}

// noReorder reports an SPS that rules out pictures presented out of decoding order.
func noReorder(codec media.Codec, sps []byte) bool {
	switch codec {
	case media.CodecH264:
		var s h264.SPS
		if s.Unmarshal(sps) != nil {
			return false
		}
		if s.ProfileIdc == 66 { // Baseline: no B slices (ITU-T H.264 A.2.1)
			return true
		}
		return s.VUI != nil && s.VUI.BitstreamRestriction != nil && s.VUI.BitstreamRestriction.MaxNumReorderFrames == 0
	case media.CodecH265:
		var s h265.SPS
		if s.Unmarshal(sps) != nil || len(s.MaxNumReorderPics) == 0 {
			return false
		}
		for _, n := range s.MaxNumReorderPics {
			if n != 0 {
				return false
			}
		}
		return true
	}
	return false
}
