package api_test

import (
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestCloseCutsStalledExports: exports whose clients stopped reading are cut when the server
// closes (SIGINT), not waited for: Close gave them 5 s and then returned with them still
// open, so vinfer took over 5 s to stop and each client, reading again, got its whole export.
func TestCloseCutsStalledExports(t *testing.T) {
	e, _, path := hourOfExports(t)
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
