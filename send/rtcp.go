package send

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"time"

	"github.com/pion/rtcp"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/source/timestamp"
)

// ReportInterval is the period of RTCP sender reports. RFC 3550 §6.2 allows less than its
// 5 s minimum (360 / session bandwidth in kbit/s: 0.36 s at 1 Mbit/s); 1 s gives a receiver
// the wall-clock mapping soon after it joins.
const ReportInterval = time.Second

// reporter sends RTCP sender reports (RFC 3550 §6.4.1) for one RTP stream on its own socket:
// one with the first access unit, then one with the first access unit at least
// ReportInterval after the previous report, and a last one with BYE (§6.6) at close. Each is
// a compound packet SR + SDES CNAME (§6.1; the CNAME is random, RFC 7022 §4.2).
//
// Timestamps: the SR's NTP time is the wall clock when it is sent; its RTP time is the media
// clock at that instant, 90 kHz with the stream's random offset: the DTS of the last access
// unit sent plus the wall time since it was sent (the pacer sends each access unit at its
// DTS). A picture thereby maps to the instant its DTS was due (to its send time when PTS =
// DTS; with B-frames a constant reorder delay later). Counts: RTP packets and payload octets
// (header excluded) written so far.
type reporter struct {
	conn     *net.UDPConn
	ssrc     uint32
	ts0      uint32
	cname    string
	packets  uint32
	octets   uint32
	last     time.Time     // when the last report went out; zero before the first
	dts      time.Duration // DTS of the last access unit sent
	sentAt   time.Time     // when it was sent
	anchored bool
}

func newReporter(addr *net.UDPAddr, ssrc, ts0 uint32) (*reporter, error) {
	conn, err := net.DialUDP("udp", nil, addr)
	if err != nil {
		return nil, fmt.Errorf("rtcp: %w", err)
	}
	var id [12]byte
	rand.Read(id[:])
	return &reporter{conn: conn, ssrc: ssrc, ts0: ts0, cname: base64.StdEncoding.EncodeToString(id[:])}, nil
}

// sent counts one RTP packet written.
func (r *reporter) sent(k *pionrtp.Packet) {
	r.packets++
	r.octets += uint32(len(k.Payload))
}

// wrote records that the packets of the access unit with DTS dts were written at now, and
// sends a report when one is due.
func (r *reporter) wrote(dts time.Duration, now time.Time) error {
	r.dts, r.sentAt, r.anchored = dts, now, true
	if !r.last.IsZero() && now.Sub(r.last) < ReportInterval {
		return nil
	}
	return r.send(now, false)
}

// report returns the sender report for instant now.
func (r *reporter) report(now time.Time) *rtcp.SenderReport {
	media := r.dts + now.Sub(r.sentAt)
	return &rtcp.SenderReport{
		SSRC:        r.ssrc,
		NTPTime:     timestamp.NTP(now),
		RTPTime:     r.ts0 + ticks90k(media),
		PacketCount: r.packets,
		OctetCount:  r.octets,
	}
}

// send writes SR + SDES (+ BYE). A receiver not listening on the RTCP port is no error.
func (r *reporter) send(now time.Time, bye bool) error {
	pkts := []rtcp.Packet{r.report(now), &rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{
		Source: r.ssrc, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: r.cname}},
	}}}}
	if bye {
		pkts = append(pkts, &rtcp.Goodbye{Sources: []uint32{r.ssrc}})
	}
	b, err := rtcp.Marshal(pkts)
	if err != nil {
		return fmt.Errorf("rtcp: %w", err)
	}
	r.last = now
	if _, err := r.conn.Write(b); err != nil && !isRefused(err) {
		return fmt.Errorf("rtcp: %w", err)
	}
	return nil
}

// close sends the last report with BYE (when anything was sent) and closes the socket.
func (r *reporter) close() error {
	var err error
	if r.anchored {
		err = r.send(time.Now(), true)
	}
	if cerr := r.conn.Close(); err == nil {
		err = cerr
	}
	return err
}
