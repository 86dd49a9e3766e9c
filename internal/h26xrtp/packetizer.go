// Package h26xrtp cuts H.264 and H.265 access units into RTP packets, shared by the RTP
// senders (send) and the ONVIF metadata server (onvifmeta).
package h26xrtp

import (
	"time"

	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph265"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// Packetizer cuts access units into RTP packets with H264 or, when that is nil, H265 (RFC
// 6184 packetization mode 1, RFC 7798); timestamps are 90 kHz from the PTS plus TS0 (RFC 3550
// §5.1). The owner sets and initialises one encoder.
type Packetizer struct {
	H264  *rtph264.Encoder
	H265  *rtph265.Encoder
	TS0   uint32
	NALUs [][]byte // the NAL units of the last Split, reused between calls
}

// Split sets NALUs to the Annex B NAL units of data, empty ones dropped.
func (p *Packetizer) Split(data []byte) {
	p.NALUs = p.NALUs[:0]
	for rest := data; len(rest) > 0; {
		var n []byte
		n, rest = h26x.NextNALU(rest)
		if len(n) > 0 {
			p.NALUs = append(p.NALUs, n)
		}
	}
}

// Packets returns au's RTP packets at timestamp TS0 + PTS, none for a unit without NAL
// units; the last carries the marker bit. Errors are the encoder's.
func (p *Packetizer) Packets(au *media.AccessUnit) ([]*pionrtp.Packet, error) {
	p.Split(au.Data)
	if len(p.NALUs) == 0 {
		return nil, nil
	}
	var pkts []*pionrtp.Packet
	var err error
	if p.H264 != nil {
		pkts, err = p.H264.Encode(p.NALUs)
	} else {
		pkts, err = p.H265.Encode(p.NALUs)
	}
	if err != nil {
		return nil, err
	}
	ts := p.TS0 + Ticks90k(au.PTS)
	for _, k := range pkts {
		k.Timestamp = ts
	}
	return pkts, nil
}

// Ticks90k is d in 90 kHz RTP clock ticks, wrapping.
func Ticks90k(d time.Duration) uint32 { return uint32(int64(d) * 9 / 100000) }
