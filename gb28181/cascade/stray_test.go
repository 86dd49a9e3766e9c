package cascade_test

import (
	"fmt"
	"log/slog"
	"net"
	"testing"

	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestStrayResponses: SIP responses matching no transaction, sent over UDP to an upstream's
// socket (from any host: responses carry no proof of origin), are dropped and counted
// (stray_responses) with one log line a minute; sipgo logged each at info on the default
// logger, a log flood anyone could drive.
func TestStrayResponses(t *testing.T) {
	var def, own testutil.LogBuffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	up := upsim.New(t, "UDP", upperID, password)
	c := start(t, up, password, &own)
	testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() })
	conn, err := net.Dial("udp", c.Upstream(0).LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const n = 100
	for i := range n {
		fmt.Fprintf(conn, "SIP/2.0 200 OK\r\nVia: SIP/2.0/UDP 127.0.0.1:9;branch=z9hG4bKstray%d\r\nFrom: <sip:%s@%s>;tag=1\r\n"+
			"To: <sip:%s@%s>;tag=2\r\nCall-ID: stray%d\r\nCSeq: 1 REGISTER\r\nContent-Length: 0\r\n\r\n", i, lowerID, lowerID[:10], lowerID, lowerID[:10], i)
		// one at a time, so that no datagram is lost to a full socket buffer
		testutil.Eventually(t, wait, fmt.Sprintf("response %d counted", i), func() bool {
			return c.Upstream(0).Counters.Map()["stray_responses"] == uint64(i+1)
		})
	}
	if k := def.Count("Unhandled sip response"); k != 0 {
		t.Errorf("%d lines on the default log for %d stray responses", k, n)
	}
	if k := own.Count("SIP responses matching no transaction dropped"); k != 1 {
		t.Errorf("%d log lines for %d stray responses, want 1", k, n)
	}
}
