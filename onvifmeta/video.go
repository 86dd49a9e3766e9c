package onvifmeta

import (
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph265"

	"github.com/vinfer/vinfer/internal/h26xrtp"
	"github.com/vinfer/vinfer/media"
)

// videoPT is the video track's dynamic RTP payload type.
const videoPT = 96

// videoPacketizer cuts access units into RTP packets as they are (RFC 6184 packetization mode
// 1, RFC 7798), 90 kHz timestamps from the PTS plus a random offset.
type videoPacketizer struct {
	forma format.Format
	h26xrtp.Packetizer
}

// newVideoPacketizer makes the packetizer of a key access unit's codec, its SDP format
// carrying the unit's parameter sets; ErrCodec for neither H.264 nor H.265.
func newVideoPacketizer(au *media.AccessUnit) (*videoPacketizer, error) {
	p := &videoPacketizer{}
	p.TS0 = random32()
	p.Split(au.Data)
	switch au.Codec {
	case media.CodecH264:
		f := &format.H264{PayloadTyp: videoPT, PacketizationMode: 1}
		for _, n := range p.NALUs {
			switch n[0] & 0x1f {
			case 7:
				f.SPS = append([]byte(nil), n...)
			case 8:
				f.PPS = append([]byte(nil), n...)
			}
		}
		p.forma = f
		p.H264 = &rtph264.Encoder{PayloadType: videoPT, PayloadMaxSize: payloadMax, PacketizationMode: 1}
		return p, p.H264.Init()
	case media.CodecH265:
		f := &format.H265{PayloadTyp: videoPT}
		for _, n := range p.NALUs {
			if len(n) < 2 {
				continue
			}
			switch (n[0] >> 1) & 0x3f {
			case 32:
				f.VPS = append([]byte(nil), n...)
			case 33:
				f.SPS = append([]byte(nil), n...)
			case 34:
				f.PPS = append([]byte(nil), n...)
			}
		}
		p.forma = f
		p.H265 = &rtph265.Encoder{PayloadType: videoPT, PayloadMaxSize: payloadMax}
		return p, p.H265.Init()
	}
	return nil, ErrCodec
}
