package sourcetest

import (
	"net"
	"testing"
	"time"

	"github.com/pion/rtp"
)

// UDPSender is a test's own RTP sender: one UDP socket (one source address) on loopback.
type UDPSender struct {
	conn *net.UDPConn
}

// NewUDPSender opens a socket that sends to addr.
func NewUDPSender(t testing.TB, addr string) *UDPSender {
	t.Helper()
	ra, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialUDP("udp", nil, ra)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &UDPSender{conn: c}
}

// Addr returns the sender's source address.
func (s *UDPSender) Addr() *net.UDPAddr { return s.conn.LocalAddr().(*net.UDPAddr) }

// Send sends packets, sleeping gap after each one whose marker bit is set (an access unit).
func (s *UDPSender) Send(t testing.TB, pkts []*rtp.Packet, gap time.Duration) {
	t.Helper()
	for _, p := range pkts {
		b, err := p.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.conn.Write(b); err != nil {
			t.Fatal(err)
		}
		if p.Marker && gap > 0 {
			time.Sleep(gap)
		}
	}
}

// Close closes the socket (a camera that restarts or changes its port).
func (s *UDPSender) Close() { s.conn.Close() }

// Conn is the sender's socket, for what is not RTP (RTCP multiplexed on the port, RFC 5761).
func (s *UDPSender) Conn() *net.UDPConn { return s.conn }
