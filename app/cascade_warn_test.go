package app

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/vinfer/vinfer/config"
)

// lockedBuf is a bytes.Buffer safe for a logger's concurrent writes.
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

// TestUpstreamChannelUnknownStream: an upstream channel naming a stream the configuration does
// not have is logged at start with its field (a typo otherwise shows only as an OFF channel in
// the upper platform); one naming a configured stream is not.
func TestUpstreamChannelUnknownStream(t *testing.T) {
	cfg, err := config.Parse([]byte(`
models: [{name: m, path: m.onnx}]
streams: [{id: cam1, source: a.mp4, model: m}]
gb28181:
  id: "34020000002000000001"
  listen: 127.0.0.1:0
  upstream:
    - server_id: "44010000002000000001"
      address: 127.0.0.1:9
      local: 127.0.0.1:0
      channels: [{id: "34020000001320000001", stream: cam1}, {id: "34020000001320000002", stream: nosuch}]
`))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = t.TempDir()
	var buf lockedBuf
	a, err := New(context.Background(), cfg, Options{Log: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a.Stop()
	out := buf.String()
	if !strings.Contains(out, "gb28181.upstream[0].channels[1].stream") || !strings.Contains(out, "stream=nosuch") {
		t.Fatalf("no warning naming the channel's field:\n%s", out)
	}
	if strings.Contains(out, "stream=cam1 ") {
		t.Fatalf("a configured stream warned about:\n%s", out)
	}
}
