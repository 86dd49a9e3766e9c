package rtsp

import (
	"bufio"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestPeerTextRedacted: an RTSP server whose answers quote credentials of its own (another
// URL's user information, token=, password=) in the reason phrase gets them redacted in the
// log and the source's stats, as the source URL's own are.
func TestPeerTextRedacted(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				cseq := "1"
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "CSeq") {
						cseq = strings.TrimSpace(v)
					}
					if line == "\r\n" {
						fmt.Fprintf(c, "RTSP/1.0 400 Bad rtsp://admin:Peer5ecret@10.0.0.9/x?auth=1&token=Tok3nX token=Free7oken password=FreePassw0rd\r\nCSeq: %s\r\n\r\n", cseq)
					}
				}
			}()
		}
	}()
	var logs testutil.LogBuffer
	s := &Source{URL: "rtsp://admin:Own5ecret@" + ln.Addr().String() + "/cam", Transport: TransportTCP, ReadTimeout: 5 * time.Second,
		Backoff: []time.Duration{10 * time.Millisecond}, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	testutil.Eventually(t, 30*time.Second, "a failed attempt logged", func() bool {
		return s.Stats().ConnectFailures >= 1 && strings.Contains(logs.String(), "400")
	})
	text := logs.String() + "\n" + s.Stats().Reason
	for _, secret := range []string{"Own5ecret", "Peer5ecret", "Tok3nX", "Free7oken", "FreePassw0rd"} {
		if strings.Contains(text, secret) {
			t.Errorf("%q shown:\n%s", secret, text)
		}
	}
	if !strings.Contains(text, "rtsp://REDACTED@10.0.0.9/x") {
		t.Errorf("the peer's URL is not shown redacted:\n%s", text)
	}
}
