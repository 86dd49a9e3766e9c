package send

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"testing"
	"time"

	"github.com/pion/rtcp"
	pionrtp "github.com/pion/rtp"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/rtp"
	"github.com/vinfer/vinfer/source/timestamp"
)

// listenUDP binds 127.0.0.1:port and delivers each datagram on the returned channel until the
// test ends.
func listenUDP(t *testing.T, port int) <-chan []byte {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadBuffer(4 << 20)
	ch := make(chan []byte, 4096)
	go func() {
		defer close(ch)
		for {
			b := make([]byte, 2048)
			n, err := c.Read(b)
			if err != nil {
				return
			}
			ch <- b[:n]
		}
	}()
	t.Cleanup(func() { c.Close() })
	return ch
}

// TestSendRTCP: `send` to plain RTP sends RTCP sender reports to the next port: one with the
// first access unit, one a second after, one with BYE at the end; each SR + SDES CNAME, the
// SSRC of the RTP packets, NTP time within the run, RTP time at or after the last packet's
// timestamp (90 kHz, same offset), packet and payload octet counts equal to the RTP packets
// sent before it (by sequence number).
func TestSendRTCP(t *testing.T) {
	path := testutil.ShortClip(t, clip, 30) // 2.4 s
	port := sourcetest.UDPPortPair(t)
	rtpC, rtcpC := listenUDP(t, port), listenUDP(t, port+1)
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- Run(context.Background(), path, fmt.Sprintf("rtp://127.0.0.1:%d?ssrc=4321", port), Options{Once: true, Log: log})
	}()
	if err := testutil.Within(t, wait, "send to end", done); err != nil {
		t.Fatal(err)
	}
	end := time.Now()

	// RTCP until BYE: everything was sent before Run returned.
	var srs []*rtcp.SenderReport
	cname := ""
	for bye := false; !bye; {
		b := testutil.Within(t, wait, "an RTCP packet with BYE", rtcpC)
		pkts, err := rtcp.Unmarshal(b)
		if err != nil {
			t.Fatalf("RTCP packet %d: %v", len(srs), err)
		}
		if _, ok := pkts[0].(*rtcp.SenderReport); !ok || len(pkts) < 2 {
			t.Fatalf("compound packet %d: %T first, %d packets; want SR + SDES", len(srs), pkts[0], len(pkts))
		}
		for _, p := range pkts {
			switch p := p.(type) {
			case *rtcp.SenderReport:
				srs = append(srs, p)
			case *rtcp.SourceDescription:
				c := p.Chunks[0]
				if c.Source != 4321 || len(c.Items) == 0 || c.Items[0].Type != rtcp.SDESCNAME || c.Items[0].Text == "" {
					t.Fatalf("SDES %+v: want the CNAME of SSRC 4321", c)
				}
				if cname != "" && c.Items[0].Text != cname {
					t.Fatalf("CNAME changed from %q to %q", cname, c.Items[0].Text)
				}
				cname = c.Items[0].Text
			case *rtcp.Goodbye:
				if len(p.Sources) != 1 || p.Sources[0] != 4321 {
					t.Fatalf("BYE for %v", p.Sources)
				}
				bye = true
			}
		}
	}
	final := srs[len(srs)-1]
	if len(srs) < 3 {
		t.Fatalf("%d sender reports in %v, want at least 3 (start, after %v, end)", len(srs), end.Sub(start), ReportInterval)
	}

	// The RTP packets, in sequence order; the last report counts them all.
	pkts := make([]*pionrtp.Packet, final.PacketCount)
	var seq0 uint16
	for got := 0; got < len(pkts); got++ {
		b := testutil.Within(t, wait, fmt.Sprintf("RTP packet %d of %d", got, len(pkts)), rtpC)
		var k pionrtp.Packet
		if err := k.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if got == 0 {
			seq0 = k.SequenceNumber
		}
		i := int(k.SequenceNumber - seq0)
		if k.SSRC != 4321 || i >= len(pkts) || pkts[i] != nil {
			t.Fatalf("RTP packet SSRC %d, sequence number %d (first %d): more packets than the last report counts (%d)", k.SSRC, k.SequenceNumber, seq0, len(pkts))
		}
		pkts[i] = &k
	}
	select {
	case b := <-rtpC:
		t.Fatalf("an RTP packet (%d bytes) beyond the last report's count %d", len(b), final.PacketCount)
	default:
	}

	var lastNTP time.Time
	for i, sr := range srs {
		if sr.SSRC != 4321 || sr.PacketCount == 0 || int(sr.PacketCount) > len(pkts) {
			t.Fatalf("SR %d: SSRC %d, %d packets of %d", i, sr.SSRC, sr.PacketCount, len(pkts))
		}
		octets := 0
		for _, k := range pkts[:sr.PacketCount] {
			octets += len(k.Payload)
		}
		if int(sr.OctetCount) != octets {
			t.Errorf("SR %d: %d octets, the first %d packets carry %d", i, sr.OctetCount, sr.PacketCount, octets)
		}
		ntp := timestamp.NTPTime(sr.NTPTime)
		if ntp.Before(start.Add(-time.Millisecond)) || ntp.After(end.Add(time.Millisecond)) || !ntp.After(lastNTP) {
			t.Errorf("SR %d: NTP time %v outside the run %v..%v or not after the previous %v", i, ntp, start, end, lastNTP)
		}
		// No B-frames in the clip: the media clock at the report is at or after the last
		// picture sent, by the time since it was sent.
		last := pkts[sr.PacketCount-1]
		if d := int32(sr.RTPTime - last.Timestamp); d < 0 || d > 10*90000 {
			t.Errorf("SR %d: RTP time %d is %d ticks after the last packet's %d", i, sr.RTPTime, d, last.Timestamp)
		}
		lastNTP = ntp
	}
	if i := int(srs[0].PacketCount); !pkts[i-1].Marker || pkts[0].Timestamp != pkts[i-1].Timestamp || pkts[i].Timestamp == pkts[0].Timestamp {
		t.Errorf("the first SR counts %d packets, not those of the first access unit", i)
	}
	t.Logf("%d sender reports in %v; last: %d packets, %d octets", len(srs), end.Sub(start), final.PacketCount, final.OctetCount)
}

// TestSendRTCPWallclock: vinfer's RTP source takes the sender reports (RTCP on the next port)
// and gives the frames the sender's wall-clock time.
func TestSendRTCPWallclock(t *testing.T) {
	port := sourcetest.UDPPortPair(t)
	src := open(t, rtp.Kind, fmt.Sprintf("rtp://127.0.0.1:%d?codec=h264", port))
	start := time.Now()
	sendTo(t, fmt.Sprintf("rtp://127.0.0.1:%d", port), Options{})
	m := &sourcetest.Matcher{Clip: sourcetest.LoadClip(t, clip), PTSTolerance: time.Millisecond}
	var wall time.Time
	err := sourcetest.ReadUntil(src, m, func(au *media.AccessUnit) bool {
		wall = au.Wallclock
		return !wall.IsZero()
	}, wait)
	if err != nil {
		t.Fatal(err)
	}
	if wall.Before(start) || wall.After(time.Now().Add(time.Second)) {
		t.Fatalf("wallclock %v, outside %v..now", wall, start)
	}
	if n := src.(*rtp.Source).Stats().SenderReports; n == 0 {
		t.Fatal("no sender report counted")
	}
	t.Logf("access unit %d has wallclock %v (%v after the start)", m.Matched, wall, wall.Sub(start))
}
