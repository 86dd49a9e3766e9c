package api_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/record"
	"github.com/vinfer/vinfer/source/file"
)

// recordLoops records the clip rel looped n times (wall times from t0) as stream's segments
// under dir, as the recorder writes them.
func recordLoops(t *testing.T, dir, stream, rel string, n int, t0 time.Time) {
	t.Helper()
	src := &file.Source{Path: asset(t, rel)}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	var units []media.AccessUnit
	for {
		au, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		c := *au
		c.Data = append([]byte(nil), au.Data...)
		units = append(units, c)
	}
	src.Close()
	span := units[len(units)-1].DTS + time.Second
	r := &record.Recorder{Dir: dir, Segment: 10 * time.Minute}
	if err := r.Init(); err != nil {
		t.Fatal(err)
	}
	o := r.Observer(stream)
	sent := int64(0)
	for k := range n {
		for i := range units {
			c := units[i]
			c.PTS += time.Duration(k) * span
			c.DTS += time.Duration(k) * span
			c.Wallclock = t0.Add(c.PTS)
			o.ObserveAccessUnit(&c)
			if c.Key && (k > 0 || i > 0) {
				sent++
				testutil.Eventually(t, time.Minute, "the writer takes the GOP", func() bool {
					st := r.Stats()
					return st.Fragments+st.Dropped >= sent
				})
			}
		}
	}
	o.EndOfStream()
	r.Close()
}

// stalledExport sends an export request on a connection with a 4 KiB receive buffer, reads
// its status line, and then reads nothing more: the answer (megabytes) stays in flight.
// hourOfExports starts an API over an hour of recording of cam1 (the person clip looped, 19
// MB, 10-minute segments from t0) and returns it with the path of an export of 59 minutes of it.
func hourOfExports(t *testing.T) (e *env, t0 time.Time, path string) {
	t.Helper()
	dir := t.TempDir()
	t0 = time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	recordLoops(t, filepath.Join(dir, "rec"), "cam1", "videos/one-by-one-person-detection.mp4", 6, t0)
	e = startWith(t, "", func(c *config.Config) {
		c.Record = &config.Record{Dir: filepath.Join(dir, "rec"), Segment: config.Duration(10 * time.Minute)}
	}, nil)
	return e, t0, fmt.Sprintf("/api/streams/cam1/export.mp4?start=%d&end=%d", t0.Unix(), t0.Add(59*time.Minute).Unix())
}

func stalledExport(t *testing.T, addr, path string) (net.Conn, string) {
	t.Helper()
	return stalledExportFrom(t, "", addr, path)
}

// stalledExportFrom is stalledExport from the loopback address ip ("": the system's choice).
func stalledExportFrom(t *testing.T, ip, addr, path string) (net.Conn, string) {
	t.Helper()
	return stalledExportHeader(t, ip, addr, path, "")
}

// stalledExportHeader is stalledExportFrom with the request header lines hdr (CRLF between).
func stalledExportHeader(t *testing.T, ip, addr, path, hdr string) (net.Conn, string) {
	t.Helper()
	if hdr != "" {
		hdr += "\r\n"
	}
	d := net.Dialer{Timeout: 30 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
	}}
	if ip != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(ip)}
	}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", path, addr, hdr)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, err := bufio.NewReaderSize(c, 16).ReadString('\n')
	if err != nil {
		t.Fatalf("an export's status line: %v", err)
	}
	return c, line
}

// Exports whose clients stop reading hold at most api.MaxExports answers at once; one more
// is answered 429 (Retry-After) rather than a further file walk and fragment in memory, and
// a slot comes back when a client hangs up.
func TestConcurrentExportsBounded(t *testing.T) {
	e, _, path := hourOfExports(t)
	addr := e.url[len("http://"):]
	var held []net.Conn
	for i := range api.MaxExports { // from as many clients (one client: api.MaxExportsPerClient)
		c, line := stalledExportFrom(t, fmt.Sprintf("127.0.0.%d", 2+i), addr, path)
		if line[:12] != "HTTP/1.1 200" {
			t.Fatalf("export %d: %q", i+1, line)
		}
		held = append(held, c)
	}
	resp, err := http.Get(e.url + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("export %d while %d are held: %s (Retry-After %q), want 429", api.MaxExports+1, api.MaxExports, resp.Status, resp.Header.Get("Retry-After"))
	}
	held[0].Close()
	testutil.Eventually(t, time.Minute, "a slot comes back", func() bool {
		_, line := stalledExport(t, addr, path)
		return line[:12] == "HTTP/1.1 200"
	})
}

// TestExportsFairPerClient: one client whose exports stall (it stops reading) holds at most
// api.MaxExportsPerClient of them, one more 429, so another client's export is still
// answered (before: it took every slot, and the others waited up to the 10-minute write
// deadline).
func TestExportsFairPerClient(t *testing.T) {
	e, t0, path := hourOfExports(t)
	addr := e.url[len("http://"):]
	held := 0
	for range api.MaxExports {
		if _, line := stalledExportFrom(t, "127.0.0.2", addr, path); line[:12] == "HTTP/1.1 200" {
			held++
		} else if line[:12] != "HTTP/1.1 429" {
			t.Fatalf("a stalled export: %q", line)
		}
	}
	if held > api.MaxExportsPerClient {
		t.Fatalf("one client holds %d stalled exports, want at most %d", held, api.MaxExportsPerClient)
	}
	short := fmt.Sprintf("/api/streams/cam1/export.mp4?start=%d&end=%d", t0.Unix(), t0.Add(5*time.Second).Unix())
	resp, err := clientFrom(t, "127.0.0.3").Get(e.url + short)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || n == 0 {
		t.Fatalf("another client's export while the first's %d stall: %s, %d bytes, want 200", held, resp.Status, n)
	}
}

// TestExportsPerForwardedClient: exports another node forwards (X-Vinfer-Forwarded-By, the
// client in X-Forwarded-For) count toward the client's share, not the forwarding node's: two
// clients of one node each hold api.MaxExportsPerClient stalled exports here.
func TestExportsPerForwardedClient(t *testing.T) {
	e, _, path := hourOfExports(t)
	addr := e.url[len("http://"):]
	for _, client := range []string{"192.0.2.10", "192.0.2.11"} {
		for i := range api.MaxExportsPerClient {
			hdr := "X-Vinfer-Forwarded-By: node-a\r\nX-Forwarded-For: " + client
			if _, line := stalledExportHeader(t, "127.0.0.4", addr, path, hdr); line[:12] != "HTTP/1.1 200" {
				t.Fatalf("export %d forwarded for %s: %q, want 200", i+1, client, line)
			}
		}
	}
}
