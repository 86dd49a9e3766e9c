package onvifmeta

import (
	"github.com/bluenviron/gortsplib/v5/pkg/format"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph265"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// videoPT is the video track's dynamic RTP payload type.
const videoPT = 96

// videoPacketizer cuts access units into RTP packets as they are (RFC 6184 packetization mode
// 1, RFC 7798), 90 kHz timestamps from the PTS plus a random offset.
type videoPacketizer struct {
	forma format.Format
	h264  *rtph264.Encoder
	h265  *rtph265.Encoder
	ts0   uint32
	nalus [][]byte
}

// newVideoPacketizer makes the packetizer of a key access unit's codec, its SDP format
// carrying the unit's parameter sets; ErrCodec for neither H.264 nor H.265.
func newVideoPacketizer(au *media.AccessUnit) (*videoPacketizer, error) {
	p := &videoPacketizer{ts0: random32()}
	p.split(au.Data)
	switch au.Codec {
	case media.CodecH264:
		f := &format.H264{PayloadTyp: videoPT, PacketizationMode: 1}
		for _, n := range p.nalus {
			switch n[0] & 0x1f {
			case 7:
				f.SPS = append([]byte(nil), n...)
			case 8:
				f.PPS = append([]byte(nil), n...)
			}
		}
		p.forma = f
		p.h264 = &rtph264.Encoder{PayloadType: videoPT, PayloadMaxSize: payloadMax, PacketizationMode: 1}
		return p, p.h264.Init()
	case media.CodecH265:
		f := &format.H265{PayloadTyp: videoPT}
		for _, n := range p.nalus {
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
		p.h265 = &rtph265.Encoder{PayloadType: videoPT, PayloadMaxSize: payloadMax}
		return p, p.h265.Init()
	}
	return nil, ErrCodec
}

func (p *videoPacketizer) split(data []byte) {
	p.nalus = p.nalus[:0]
	for rest := data; len(rest) > 0; {
		var n []byte
		n, rest = h26x.NextNALU(rest)
		if len(n) > 0 {
			p.nalus = append(p.nalus, n)
		}
	}
}

// packets returns au's RTP packets at timestamp ts0 + PTS; the last carries the marker.
func (p *videoPacketizer) packets(au *media.AccessUnit) ([]*pionrtp.Packet, error) {
	p.split(au.Data)
	if len(p.nalus) == 0 {
		return nil, nil
	}
	var pkts []*pionrtp.Packet
	var err error
	if p.h264 != nil {
		pkts, err = p.h264.Encode(p.nalus)
	} else {
		pkts, err = p.h265.Encode(p.nalus)
	}
	if err != nil {
		return nil, err
	}
	ts := p.ts0 + ticks90k(au.PTS)
	for _, k := range pkts {
		k.Timestamp = ts
	}
	return pkts, nil
}
