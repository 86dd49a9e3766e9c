package send

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"net/url"
	"time"

	"github.com/bluenviron/gortsplib/v5/pkg/format"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph264"
	"github.com/bluenviron/gortsplib/v5/pkg/format/rtph265"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/h26xrtp"
	"github.com/vinfer/vinfer/media"
)

// payloadMax is the most RTP payload bytes per packet: 1400 keeps a packet with its IP, UDP
// and RTP headers under a 1500-byte MTU.
const payloadMax = 1400

// packetizer cuts access units into RTP packets (RFC 6184 packetization mode 1, RFC 7798),
// timestamps 90 kHz from the PTS plus a random offset (RFC 3550 §5.1).
type packetizer struct {
	forma format.Format
	h26xrtp.Packetizer
}

func newPacketizer(c media.Codec, pt uint8, ssrc *uint32) (*packetizer, error) {
	p := &packetizer{}
	p.TS0 = random32()
	switch c {
	case media.CodecH264:
		p.forma = &format.H264{PayloadTyp: pt, PacketizationMode: 1}
		p.H264 = &rtph264.Encoder{PayloadType: pt, SSRC: ssrc, PayloadMaxSize: payloadMax, PacketizationMode: 1}
		return p, p.H264.Init()
	case media.CodecH265:
		p.forma = &format.H265{PayloadTyp: pt}
		p.H265 = &rtph265.Encoder{PayloadType: pt, SSRC: ssrc, PayloadMaxSize: payloadMax}
		return p, p.H265.Init()
	}
	return nil, ErrCodec
}

// ssrc returns the stream's SSRC (the encoder draws one when none was given).
func (p *packetizer) ssrc() uint32 {
	if p.H264 != nil {
		return *p.H264.SSRC
	}
	return *p.H265.SSRC
}

func random32() uint32 {
	var b [4]byte
	rand.Read(b[:])
	return binary.BigEndian.Uint32(b[:])
}

// rtpTarget sends RTP over UDP to rtp://host:port[?pt=96][&ssrc=N], and RTCP sender reports
// to port+1 (RFC 3550 §11; none when port is 65535). Parameter sets travel in-band before
// every key frame, so the receiver needs only the codec.
type rtpTarget struct {
	conn *net.UDPConn
	p    *packetizer
	rtcp *reporter // nil: no RTCP port
	buf  []byte
}

func newRTPTarget(u *url.URL, c media.Codec) (*rtpTarget, error) {
	pt, err := query(u, "pt", 96, 7)
	if err != nil {
		return nil, err
	}
	var ssrc *uint32
	if u.Query().Has("ssrc") {
		v, err := query(u, "ssrc", 0, 32)
		if err != nil {
			return nil, err
		}
		s := uint32(v)
		ssrc = &s
	}
	p, err := newPacketizer(c, uint8(pt), ssrc)
	if err != nil {
		return nil, err
	}
	ra, err := net.ResolveUDPAddr("udp", u.Host)
	if err != nil {
		return nil, err
	}
	conn, err := net.DialUDP("udp", nil, ra)
	if err != nil {
		return nil, err
	}
	t := &rtpTarget{conn: conn, p: p}
	if ra.Port < 65535 {
		if t.rtcp, err = newReporter(&net.UDPAddr{IP: ra.IP, Port: ra.Port + 1, Zone: ra.Zone}, p.ssrc(), p.TS0); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return t, nil
}

func (t *rtpTarget) write(au *media.AccessUnit) error {
	pkts, err := t.p.Packets(au)
	if err != nil {
		return err
	}
	for _, k := range pkts {
		if err := marshal(k, &t.buf); err != nil {
			return err
		}
		// A receiver not listening yet answers with ICMP port unreachable, which a later
		// write reports: a camera keeps sending regardless.
		_, err := t.conn.Write(t.buf)
		if err != nil && !isRefused(err) {
			return fmt.Errorf("rtp: %w", err)
		}
		if err == nil && t.rtcp != nil {
			t.rtcp.sent(k)
		}
	}
	if t.rtcp == nil || len(pkts) == 0 {
		return nil
	}
	return t.rtcp.wrote(au.DTS, time.Now())
}

func (t *rtpTarget) close() error {
	var err error
	if t.rtcp != nil {
		err = t.rtcp.close()
	}
	if cerr := t.conn.Close(); err == nil {
		err = cerr
	}
	return err
}

// marshal writes k into *buf, growing it when needed.
func marshal(k *pionrtp.Packet, buf *[]byte) error {
	n := k.MarshalSize()
	if cap(*buf) < n {
		*buf = make([]byte, n)
	}
	*buf = (*buf)[:n]
	_, err := k.MarshalTo(*buf)
	return err
}
