package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/metrics"
	"github.com/vinfer/vinfer/sink"
)

// slowClient connects to addr with a tiny receive buffer, sends req and then never reads.
func slowClient(t *testing.T, addr, req string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		if err == nil {
			err = serr
		}
		return err
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c
}

// serveApp runs an App of cfg, logging to logs (with opts), behind an API server on loopback;
// both stop at the test's end, and the logs are shown when it failed.
func serveApp(t *testing.T, cfg *config.Config, logs *testutil.LogBuffer, opts *slog.HandlerOptions) (*App, *api.Server) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logs, opts))
	mx := metrics.New()
	a, err := New(context.Background(), cfg, Options{Log: log, Observer: mx})
	if err != nil {
		t.Fatal(err)
	}
	srv := &api.Server{App: a, Metrics: mx, Addr: "127.0.0.1:0", Log: log}
	if err := srv.Start(); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close()
		a.Stop()
		if t.Failed() {
			t.Logf("logs:\n%s", logs)
		}
	})
	return a, srv
}

// TestSlowSubscribersCounted: an SSE and a WebSocket subscriber that stop reading are dropped
// once a write waited out its timeout, and each drop is counted on /metrics in
// vinfer_api_subscribers_dropped_total{kind} (issue 25, item 8: they were dropped uncounted).
func TestSlowSubscribersCounted(t *testing.T) {
	cfg, err := config.Parse([]byte("output: {jsonl: none}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, srv := serveApp(t, cfg, &testutil.LogBuffer{}, &slog.HandlerOptions{Level: slog.LevelDebug})
	addr := strings.TrimPrefix(srv.URL(), "http://")
	dropped := func(kind string) string {
		resp, err := http.Get(srv.URL() + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		prefix := fmt.Sprintf(`vinfer_api_subscribers_dropped_total{kind=%q} `, kind)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
				return v
			}
		}
		return "none"
	}
	if d := dropped("sse") + " " + dropped("ws"); d != "0 0" {
		t.Fatalf("before any subscriber: dropped sse, ws = %s", d)
	}

	// A result of about 256 KiB, as the pipeline hands it to the fanout.
	res := &sink.Result{Stream: "cam1", Width: 1920, Height: 1080, Model: "m"}
	for i := range 2500 {
		res.Detections = append(res.Detections, detect.Detection{ClassID: i % 80, Label: "car", Score: 0.5,
			Box: [4]float32{float32(i), 1, float32(i + 10), 20}, TrackID: int64(i)})
	}
	for _, tc := range []struct{ kind, req string }{
		{"sse", "GET /api/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"},
		{"ws", "GET /api/ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
			"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"},
	} {
		c := slowClient(t, addr, tc.req)
		// One result per look: the server's socket buffers fill, its write waits out its
		// timeout and it drops the subscriber.
		testutil.Eventually(t, 2*time.Minute, tc.kind+" subscriber dropped and counted", func() bool {
			res.Frame++
			if err := a.fanout.Write(res); err != nil {
				t.Fatal(err)
			}
			return dropped(tc.kind) == "1"
		})
		c.Close()
	}
	if d := dropped("sse") + " " + dropped("ws"); d != "1 1" {
		t.Fatalf("dropped sse, ws = %s, want 1 1", d)
	}
}
