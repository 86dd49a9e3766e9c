package sourcetest

import (
	"testing"

	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph265"
	"github.com/pion/rtp"

	"github.com/vinfer/vinfer/media"
)

// Packetize returns the RTP packets (RFC 6184 packetization mode 1, or RFC 7798) of the clip's
// samples from..to (exclusive), timestamped from the clip's PTS plus ts0, with the given SSRC
// and first sequence number. inband puts the parameter sets before each key frame.
func (c *Clip) Packetize(t testing.TB, from, to int, pt uint8, ssrc uint32, seq uint16, ts0 uint32, inband bool) []*rtp.Packet {
	t.Helper()
	var enc interface {
		Encode([][]byte) ([]*rtp.Packet, error)
	}
	switch c.Codec {
	case media.CodecH264:
		e := &rtph264.Encoder{PayloadType: pt, SSRC: &ssrc, InitialSequenceNumber: &seq, PacketizationMode: 1}
		if err := e.Init(); err != nil {
			t.Fatal(err)
		}
		enc = e
	case media.CodecH265:
		e := &rtph265.Encoder{PayloadType: pt, SSRC: &ssrc, InitialSequenceNumber: &seq}
		if err := e.Init(); err != nil {
			t.Fatal(err)
		}
		enc = e
	}
	var out []*rtp.Packet
	for i := from; i < to; i++ {
		nalus := c.Samples[i].NALUs
		if inband {
			nalus = c.WithParamSets(i)
		}
		pkts, err := enc.Encode(nalus)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkts {
			p.Timestamp = ts0 + uint32(c.Samples[i].PTS)
		}
		out = append(out, pkts...)
	}
	return out
}
