package platform

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// startClockedLogged starts a server on a fake clock whose log is own.
func startClockedLogged(t *testing.T) (s *Server, clock *fakeClock, own *testutil.LogBuffer) {
	t.Helper()
	clock, own = &fakeClock{now: time.Now()}, &testutil.LogBuffer{}
	s = startServerWith(t, nil, func(s *Server) {
		s.clock = clock.Now
		s.Logger = slog.New(slog.NewTextHandler(own, nil))
	})
	return s, clock, own
}

// TestTCPGarbageLog: SIP TCP connections that each send something unparsable (an HTTP
// request, a bad Content-Length, a 60 KB header line) are closed and counted as malformed;
// sipgo's "failed to parse", which quotes what was sent, is logged once a minute, cut short.
func TestTCPGarbageLog(t *testing.T) {
	t.Parallel()
	s, clock, own := startClockedLogged(t)
	garbage := []string{
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"INVITE sip:x SIP/2.0\r\nContent-Length: abc\r\n\r\n",
		"MESSAGE sip:x SIP/2.0\r\nX: " + strings.Repeat("A", 60000) + "\r\n\r\n",
	}
	const n = 30
	for i := range n {
		c := dialFrom(t, s, "127.0.0.1")
		if _, err := c.Write([]byte(garbage[i%len(garbage)])); err != nil {
			t.Fatal(err)
		}
		closed(t, c, fmt.Sprintf("connection %d", i))
		c.Close()
	}
	testutil.Eventually(t, 30*time.Second, fmt.Sprintf("%d malformed", n), func() bool { return s.Counters.Malformed.Load() == n })
	if c := own.Count("failed to parse"); c != 1 {
		t.Fatalf("%d \"failed to parse\" lines for %d connections, want 1", c, n)
	}
	for _, l := range strings.Split(own.String(), "\n") {
		if len(l) > 1000 {
			t.Fatalf("a log line of %d bytes: %.200s…", len(l), l)
		}
	}
	clock.Add(61 * time.Second)
	c := dialFrom(t, s, "127.0.0.1")
	if _, err := c.Write([]byte(garbage[0])); err != nil {
		t.Fatal(err)
	}
	closed(t, c, "a connection a minute later")
	testutil.Eventually(t, 30*time.Second, "a second line a minute later", func() bool {
		return own.Count("failed to parse") == 2 && strings.Contains(own.String(), fmt.Sprintf("unlogged_since_last=%d", n-1))
	})
}

// TestStrayResponses: SIP responses over UDP that answer no transaction of the platform are
// dropped, counted (stray_responses) and logged once a minute; sipgo logged each at info.
func TestStrayResponses(t *testing.T) {
	t.Parallel()
	var own testutil.LogBuffer
	s := startServerWith(t, nil, func(s *Server) { s.Logger = slog.New(slog.NewTextHandler(&own, nil)) })
	u := newRawUA(t, sipAddr(s))
	const n = 200
	for i := range n {
		u.send(fmt.Appendf(nil, "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bKstray%d\r\nFrom: <sip:%s@%s>;tag=1\r\n"+
			"To: <sip:%s@%s>;tag=2\r\nCall-ID: stray%d\r\nCSeq: 1 INVITE\r\nContent-Length: 0\r\n\r\n", i, testServerID, testDomain, testDevice, testDomain, i))
		// one at a time, so that no datagram is lost to a full socket buffer
		testutil.Eventually(t, 10*time.Second, fmt.Sprintf("response %d counted", i), func() bool { return s.Counters.StrayResponses.Load() == uint64(i+1) })
	}
	if c := own.Count("SIP responses matching no transaction dropped"); c != 1 {
		t.Fatalf("%d log lines for %d stray responses, want 1\n%s", c, n, own.String())
	}
}
