package api_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
)

// TestCloseCutsStalledExports: exports whose clients stopped reading are cut when the server
// closes (SIGINT), not waited for: Close gave them 5 s and then returned with them still
// open, so vinfer took over 5 s to stop and each client, reading again, got its whole export.
func TestCloseCutsStalledExports(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	recordLoops(t, filepath.Join(dir, "rec"), "cam1", "videos/one-by-one-person-detection.mp4", 6, t0) // 19 MB
	e := startWith(t, "", func(c *config.Config) {
		c.Record = &config.Record{Dir: filepath.Join(dir, "rec"), Segment: config.Duration(10 * time.Minute)}
	}, nil)
	path := fmt.Sprintf("/api/streams/cam1/export.mp4?start=%d&end=%d", t0.Unix(), t0.Add(59*time.Minute).Unix())
	resp, err := http.Get(e.url + path)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a whole export: %s, %v", resp.Status, err)
	}
	c, line := stalledExport(t, e.url[len("http://"):], path)
	if line[:12] != "HTTP/1.1 200" {
		t.Fatalf("export: %q", line)
	}
	if err := e.srv.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	c.SetReadDeadline(time.Now().Add(time.Minute))
	got, err := io.Copy(io.Discard, c)
	var op *net.OpError
	if err != nil && !(errors.As(err, &op) && !op.Timeout()) {
		t.Fatalf("reading after close: %v", err)
	}
	if got >= whole {
		t.Fatalf("the stalled export went on after Close: %d bytes read of a %d-byte export", got, whole)
	}
}
