package metrics_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/metrics"
)

// lockedBuf is a log sink read while the app writes.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// rtspDescribe sends one raw RTSP DESCRIBE (RFC 2326 §10.2) with the extra header lines on a
// fresh connection and returns the response's status code and the connection's local address.
func rtspDescribe(t *testing.T, addr string, extra ...string) (int, string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	req := "DESCRIBE rtsp://" + addr + "/cam1 RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n"
	for _, h := range extra {
		req += h + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("DESCRIBE %v: %v", extra, err)
	}
	var code int
	if _, err := fmt.Sscanf(line, "RTSP/1.0 %d", &code); err != nil {
		t.Fatalf("status line %q", line)
	}
	return code, c.LocalAddr().String()
}

// TestRTSPAuthFailures: raw DESCRIBEs to output.rtsp with no credentials, a wrong password
// and an unoffered scheme are refused and counted in vinfer_rtsp_auth_failures_total by
// reason; refused credentials are logged with the peer's address, one line per 10 s however
// many come.
func TestRTSPAuthFailures(t *testing.T) {
	logs := &lockedBuf{}
	cfg := &config.Config{Output: config.Output{Token: "rtsp-auth-failure-test-token",
		RTSP: &config.RTSPOut{Listen: "127.0.0.1:0"}}}
	mx := metrics.New()
	a := apptest.MustApp(t, cfg, app.Options{Log: slog.New(slog.NewTextHandler(logs, nil)), Observer: mx})
	defer a.Stop()
	done := make(chan struct{})
	defer close(done)
	mx.Watch(a, done)
	srv := httptest.NewServer(mx.Handler())
	defer srv.Close()
	addr := a.RTSPMetaAddr()

	basic := func(user, pass string) string {
		return "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
	}
	if code, _ := rtspDescribe(t, addr); code != 401 {
		t.Fatalf("no credentials: %d, want 401", code)
	}
	code, peer := rtspDescribe(t, addr, basic("vinfer", "guess-1"))
	if code != 401 {
		t.Fatalf("wrong password: %d, want 401", code)
	}
	if code, _ := rtspDescribe(t, addr, basic("vinfer", "guess-2")); code != 401 {
		t.Fatalf("wrong password: %d, want 401", code)
	}
	if code, _ := rtspDescribe(t, addr, "Authorization: Bearer rtsp-auth-failure-test-token"); code != 401 {
		t.Fatalf("bearer scheme: %d, want 401", code)
	}
	want := map[string]float64{"missing": 1, "wrong": 2, "method": 1}
	testutil.Eventually(t, 30*time.Second, "the refusals counted by reason", func() bool {
		fams := scrape(t, srv.URL+"/metrics")
		for reason, n := range want {
			if v, _ := value(fams, "vinfer_rtsp_auth_failures_total", map[string]string{"reason": reason}); v != n {
				return false
			}
		}
		return true
	})
	fams := scrape(t, srv.URL+"/metrics")
	for reason, n := range want {
		if v, ok := value(fams, "vinfer_rtsp_auth_failures_total", map[string]string{"reason": reason}); !ok || v != n {
			t.Errorf("reason %s: %v (present %v), want %v", reason, v, ok, n)
		}
	}
	got := logs.String()
	if n := strings.Count(got, "rtsp credentials refused"); n != 1 {
		t.Errorf("%d log lines about refused credentials, want 1 (rate-limited):\n%s", n, got)
	}
	if !strings.Contains(got, "peer="+peer) {
		t.Errorf("the log names no peer %s:\n%s", peer, got)
	}
}
