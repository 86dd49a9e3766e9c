package platform

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// dialFrom opens a SIP TCP connection to s from the loopback address src (127.0.0.x).
func dialFrom(t *testing.T, s *Server, src string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", sipAddr(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// options sends OPTIONS on c and reports whether it was answered 200 (false: the connection
// was closed by the platform).
func options(t *testing.T, c net.Conn) bool {
	t.Helper()
	local := c.LocalAddr().String()
	req := fmt.Sprintf("OPTIONS sip:%s@%s SIP/2.0\r\nVia: SIP/2.0/TCP %s;branch=z9hG4bK%d\r\nFrom: <sip:%s@%s>;tag=1\r\nTo: <sip:%s@%s>\r\n"+
		"Call-ID: %d@test\r\nCSeq: 1 OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n",
		testServerID, testDomain, local, time.Now().UnixNano(), testDevice, testDomain, testServerID, testDomain, time.Now().UnixNano())
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte(req)); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		if closedByPeer(err) {
			return false
		}
		t.Fatalf("OPTIONS over TCP: %v", err)
	}
	return strings.HasPrefix(line, "SIP/2.0 200")
}

func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// closed waits (at most 30 s) for the platform to close c.
func closed(t *testing.T, c net.Conn, what string) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.Copy(io.Discard, c)
	if err != nil && !closedByPeer(err) {
		t.Fatalf("%s: not closed by the platform: %v", what, err)
	}
}

// TestTCPLimits: SIP TCP connections beyond max_tcp_conns_per_host from one address, or beyond
// max_tcp_conns in all, are closed on accept and counted (tcp_refused); a place freed is taken
// again; those below the limits are served.
func TestTCPLimits(t *testing.T) {
	t.Parallel()
	s := startServer(t, func(c *config.GB28181) { c.MaxTCPConns, c.MaxTCPConnsPerHost = 4, 2 })
	a1, a2 := dialFrom(t, s, "127.0.0.1"), dialFrom(t, s, "127.0.0.1")
	for _, c := range []net.Conn{a1, a2} {
		if !options(t, c) {
			t.Fatal("a connection within the limits was closed")
		}
	}
	closed(t, dialFrom(t, s, "127.0.0.1"), "a third connection from one address (max_tcp_conns_per_host 2)")
	testutil.Eventually(t, 30*time.Second, "tcp_refused 1", func() bool { return s.Counters.TCPRefused.Load() == 1 })
	b1, b2 := dialFrom(t, s, "127.0.0.2"), dialFrom(t, s, "127.0.0.2")
	for _, c := range []net.Conn{b1, b2} {
		if !options(t, c) {
			t.Fatal("a connection from another address within max_tcp_conns was closed")
		}
	}
	closed(t, dialFrom(t, s, "127.0.0.3"), "a fifth connection (max_tcp_conns 4)")
	testutil.Eventually(t, 30*time.Second, "tcp_refused 2", func() bool { return s.Counters.TCPRefused.Load() == 2 })
	a1.Close()
	testutil.Eventually(t, 30*time.Second, "the place freed taken by a new connection", func() bool {
		return options(t, dialFrom(t, s, "127.0.0.1"))
	})
}

// TestTCPTimeouts: a connection that sends nothing is closed after tcp_idle_timeout; one that
// begins a message and never finishes it after tcp_message_timeout, however long the idle
// timeout; both counted (tcp_timeouts) and logged once a minute at most.
func TestTCPTimeouts(t *testing.T) {
	t.Parallel()
	var own testutil.LogBuffer
	setup := func(s *Server) { s.Logger = slog.New(slog.NewTextHandler(&own, nil)) }
	idle := startServerWith(t, func(c *config.GB28181) { c.TCPIdleTimeout = config.Duration(time.Second) }, setup)
	c := dialFrom(t, idle, "127.0.0.1")
	if !options(t, c) {
		t.Fatal("OPTIONS over TCP not answered")
	}
	closed(t, c, "an idle connection")
	closed(t, dialFrom(t, idle, "127.0.0.1"), "a connection that never sent anything")
	testutil.Eventually(t, 30*time.Second, "tcp_timeouts 2", func() bool { return idle.Counters.TCPTimeouts.Load() == 2 })

	half := startServerWith(t, func(c *config.GB28181) {
		c.TCPIdleTimeout, c.TCPMessageTimeout = config.Duration(time.Hour), config.Duration(time.Second)
	}, setup)
	for _, part := range []string{"REGISTER sip:" + testServerID + "@" + testDomain + " SIP/2.0\r\nVia: SIP/2.0/TCP 127.0.0.1:5", // a header
		"OPTIONS sip:x SIP/2.0\r\nCSeq: 1 OPTIONS\r\nContent-Length: 100\r\n\r\nshort body"} { // a body
		c := dialFrom(t, half, "127.0.0.1")
		if _, err := c.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
		closed(t, c, fmt.Sprintf("a half-sent message (%.20q…)", part))
	}
	testutil.Eventually(t, 30*time.Second, "tcp_timeouts 2", func() bool { return half.Counters.TCPTimeouts.Load() == 2 })
	if !strings.Contains(own.String(), "why=\"message not complete within tcp_message_timeout\"") {
		t.Fatalf("no log line for the half-sent messages:\n%s", own.String())
	}
}

// TestTCPFraming: the connection follows SIP framing (keepalive CRLFs, header, Content-Length
// body, compact l:) to know when a message is under way.
func TestTCPFraming(t *testing.T) {
	now := time.Now()
	c := &tcpConn{}
	for _, step := range []struct {
		in      string
		pending bool
	}{
		{"\r\n\r\n", false},
		{"OPTIONS sip:x SIP/2.0\r\nContent-Length: 4\r\n", true},
		{"\r\nab", true},
		{"cd", false},
		{"\r\nMESSAGE sip:x SIP/2.0\r\nl: 2\r\n\r\nxy", false},
		{"BYE sip:x SIP/2.0\r\n\r\n", false},
		{"BYE", true},
	} {
		if err := c.frame([]byte(step.in), now); err != nil {
			t.Fatal(err)
		}
		if got := !c.started.IsZero(); got != step.pending {
			t.Fatalf("after %q: message under way %v, want %v", step.in, got, step.pending)
		}
	}
	c = &tcpConn{}
	if err := c.frame([]byte("OPTIONS sip:x SIP/2.0\r\nX: "+strings.Repeat("a", maxSIPHeader)), now); !errors.Is(err, errHeaderTooLarge) {
		t.Fatalf("a header over 64 KiB: %v", err)
	}
}

// flakyListener fails its first accepts as a process out of descriptors does, then hands out
// one end of a pipe, then reports itself closed.
type flakyListener struct {
	net.Listener
	fails int
	conn  net.Conn
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if l.fails > 0 {
		l.fails--
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", syscall.EMFILE)}
	}
	if c := l.conn; c != nil {
		l.conn = nil
		return c, nil
	}
	return nil, net.ErrClosed
}

// TestTCPAcceptErrors: out of descriptors, accepting goes on after a pause (counted,
// tcp_accept_errors) instead of ending (sipgo stops serving TCP on any accept error).
func TestTCPAcceptErrors(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	s := &Server{Logger: slog.New(slog.DiscardHandler)}
	s.limited = rateLog{logger: s.Logger, every: logEvery, now: time.Now}
	l := &tcpListener{Listener: &flakyListener{fails: 3, conn: a}, srv: s, maxConns: 1, maxPerHost: 1,
		idle: time.Minute, msgTimeout: time.Minute, byHost: map[string]int{}}
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("accept after 3 EMFILE: %v", err)
	}
	c.Close()
	if n := s.Counters.TCPAcceptErrors.Load(); n != 3 {
		t.Fatalf("tcp_accept_errors %d, want 3", n)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a closed listener: %v", err)
	}
}
