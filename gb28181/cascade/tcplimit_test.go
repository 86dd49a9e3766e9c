package cascade_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/testutil"
)

// closedByPeer reports whether c was closed by vinfer (io.EOF or a reset) within wait; false
// when it stays open.
func closedByPeer(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	return err != nil
}

// TestTCPStrangers: vinfer's SIP TCP listener toward an upper platform closes at once a
// connection from another address, and connections beyond 8 from the upper platform's (an
// idle or half-open flood would otherwise hold descriptors for ever); the upper platform's own
// requests still get through.
func TestTCPStrangers(t *testing.T) {
	up := upsim.New(t, "TCP", upperID, password)
	c := start(t, up, password, &testutil.LogBuffer{})
	testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })
	addr := c.Upstream(0).LocalAddr()

	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: wait}
	s, err := d.Dial("tcp", addr)
	if err != nil {
		t.Skipf("no 127.0.0.2 to dial from: %v", err)
	}
	defer s.Close()
	if !closedByPeer(t, s) {
		t.Fatalf("a connection from 127.0.0.2 (not the upper platform) stayed open")
	}

	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range 9 {
		c, err := net.DialTimeout("tcp", addr, wait)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	if !closedByPeer(t, conns[8]) {
		t.Fatalf("a 9th idle connection from the upper platform's address stayed open")
	}
	if got := c.Upstream(0).Counters.TCPRefused.Load(); got < 2 {
		t.Errorf("tcp_refused %d, want at least 2", got)
	}
	for _, c := range conns {
		c.Close()
	}
	// The slots come back: 8 new connections from the upper platform's address are served.
	for i := range 8 {
		testutil.Eventually(t, wait, fmt.Sprintf("connection %d served", i+1), func() bool {
			c, err := net.DialTimeout("tcp", addr, wait)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(c, "OPTIONS sip:%s@%s SIP/2.0\r\nVia: SIP/2.0/TCP %s;branch=z9hG4bKopt%d\r\nFrom: <sip:%s@%s>;tag=o\r\n"+
				"To: <sip:%s@%s>\r\nCall-ID: opt%d\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n",
				lowerID, lowerID[:10], c.LocalAddr(), i, upperID, upperID[:10], lowerID, lowerID[:10], i)
			c.SetReadDeadline(time.Now().Add(wait))
			b := make([]byte, 12)
			n, _ := io.ReadFull(c, b)
			if string(b[:n]) != "SIP/2.0 200 " {
				c.Close()
				return false
			}
			conns = append(conns, c)
			return true
		})
	}
	if m, _ := up.Query("Catalog", lowerID); m.Status() != 200 {
		t.Fatalf("the upper platform's Catalog query after the flood: %s, want 200", m.Start)
	}
}
