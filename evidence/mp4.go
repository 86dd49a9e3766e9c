package evidence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mp4/codecs"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/pmp4"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// timescale is the clips' media timescale (ticks per second), the 90 kHz of RTP video.
const timescale = 90000

// Errors of WriteMP4.
var (
	ErrNoUnits       = errors.New("no access units")
	ErrNoParamSets   = errors.New("no parameter sets before the first key frame")
	ErrCodecChange   = errors.New("codec changes within the clip")
	ErrClipTooLong   = errors.New("clip too long for a 32-bit MP4")
	errUnknownCodec  = errors.New("unknown codec")
	errNotKeyAtStart = errors.New("clip does not start at a key frame")
)

// WriteMP4 writes units (decode order, Annex B, starting at a key frame) as one progressive
// MP4 (ISO/IEC 14496-12 with the moov box first, so a browser can play it while it loads;
// avc1/hvc1 sample entries per ISO/IEC 14496-15) without re-encoding: start codes become
// 4-byte lengths, access unit delimiters are dropped, and the parameter sets of the first key
// frame move to the sample entry (later different ones stay in-band). The presentation starts
// at the first unit's PTS (an edit list, §8.6.6, skips a B-frame reordering delay). It returns
// the presentation's duration.
func WriteMP4(w io.Writer, units []Unit) (time.Duration, error) {
	if len(units) == 0 {
		return 0, ErrNoUnits
	}
	if !units[0].Key {
		return 0, errNotKeyAtStart
	}
	c := units[0].Codec
	var vps, sps, pps []byte
	for n, rest := h26x.NextNALU(units[0].Data); len(n) > 0; n, rest = h26x.NextNALU(rest) {
		switch h26x.Classify(c, n) {
		case h26x.KindVPS:
			vps = append(vps[:0:0], n...)
		case h26x.KindSPS:
			sps = append(sps[:0:0], n...)
		case h26x.KindPPS:
			pps = append(pps[:0:0], n...)
		}
	}
	var codec codecs.Codec
	switch c {
	case media.CodecH264:
		if sps == nil || pps == nil {
			return 0, ErrNoParamSets
		}
		codec = &codecs.H264{SPS: sps, PPS: pps}
	case media.CodecH265:
		if vps == nil || sps == nil || pps == nil {
			return 0, ErrNoParamSets
		}
		codec = &codecs.H265{VPS: vps, SPS: sps, PPS: pps}
	default:
		return 0, fmt.Errorf("%w %v", errUnknownCodec, c)
	}

	ticks := func(d time.Duration) int64 { return int64(d) * timescale / int64(time.Second) }
	samples := make([]*pmp4.Sample, len(units))
	payloads := make([][]byte, len(units))
	var total int64
	for i := range units {
		u := &units[i]
		if u.Codec != c {
			return 0, ErrCodecChange
		}
		payloads[i] = toAVCC(c, u.Data, sps, pps, vps)
		total += int64(len(payloads[i]))
		var dur int64
		switch {
		case i+1 < len(units):
			dur = ticks(units[i+1].DTS) - ticks(u.DTS)
		case i > 0:
			dur = ticks(u.DTS) - ticks(units[i-1].DTS)
		default:
			dur = timescale / 10
		}
		if dur <= 0 { // equal or backwards DTS: keep the track's time moving
			dur = 1
		}
		p := payloads[i]
		samples[i] = &pmp4.Sample{Duration: uint32(dur), PTSOffset: int32(ticks(u.PTS) - ticks(u.DTS)),
			IsNonSyncSample: !u.Key, PayloadSize: uint32(len(p)),
			GetPayload: func() ([]byte, error) { return p, nil }}
	}
	if total >= 1<<31 {
		return 0, ErrClipTooLong
	}
	tr := &pmp4.Track{ID: 1, TimeScale: timescale, Codec: codec, Samples: samples,
		TimeOffset: -samples[0].PTSOffset}
	p := pmp4.Presentation{Tracks: []*pmp4.Track{tr}}
	if err := p.Marshal(w); err != nil {
		return 0, err
	}
	var dur int64
	for _, s := range samples {
		dur += int64(s.Duration)
	}
	return time.Duration(dur) * time.Second / timescale, nil
}

// toAVCC converts one Annex-B access unit to length-prefixed NAL units (ISO/IEC 14496-15
// §5.3.2 with 4-byte lengths), leaving out delimiters and the parameter sets the sample entry
// already has.
func toAVCC(c media.Codec, annexb, sps, pps, vps []byte) []byte {
	out := make([]byte, 0, len(annexb)+16)
	for n, rest := h26x.NextNALU(annexb); len(n) > 0; n, rest = h26x.NextNALU(rest) {
		switch h26x.Classify(c, n) {
		case h26x.KindAUD:
			continue
		case h26x.KindSPS:
			if bytes.Equal(n, sps) {
				continue
			}
		case h26x.KindPPS:
			if bytes.Equal(n, pps) {
				continue
			}
		case h26x.KindVPS:
			if bytes.Equal(n, vps) {
				continue
			}
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(n)))
		out = append(out, n...)
	}
	return out
}
