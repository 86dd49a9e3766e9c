package app

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/sink"
)

const diskFullWait = time.Minute // generous: only matters when the test fails

// diskFullRig is a running app whose one sink, "mqtt", has its outbox in dir and a broker at
// addr that is down until startBroker; its API and /metrics are served on loopback.
type diskFullRig struct {
	t       *testing.T
	addr    string
	url     string
	logs    *testutil.LogBuffer
	sink    sink.Sink
	written uint64 // records handed to the sink (one event each)
}

func newDiskFullRig(t *testing.T, dir string) *diskFullRig {
	t.Helper()
	r := &diskFullRig{t: t, addr: testutil.FreeAddr(t), logs: &testutil.LogBuffer{}}
	cfg, err := config.Parse(fmt.Appendf(nil, `
output:
  jsonl: none
  sinks:
    - type: mqtt
      url: mqtt://%s
      counts: false
      min_backoff: 10ms
      max_backoff: 100ms
      drain_timeout: 1s
      outbox: {dir: %q}
`, r.addr, dir))
	if err != nil {
		t.Fatal(err)
	}
	a, srv := serveApp(t, cfg, r.logs, nil)
	for _, s := range a.sinks {
		if d, ok := s.(deliveringSink); ok && d.Name() == "mqtt" {
			r.sink = s
		}
	}
	r.url = srv.URL()
	if r.sink == nil {
		t.Fatal("no mqtt sink")
	}
	return r
}

// produce hands n results of one event each to the sink, as the pipeline does.
func (r *diskFullRig) produce(n int) {
	r.t.Helper()
	for range n {
		now := time.Now()
		res := &sink.Result{Stream: "cam1", Frame: int64(r.written), Events: []event.Event{{
			ID: event.NewID(now), Type: event.LineCross, Stream: "cam1", Frame: int64(r.written),
			Time: now, TrackID: int64(r.written), Label: "car", Line: "gate"}}}
		if err := r.sink.Write(res); err != nil {
			r.t.Fatalf("sink write %d: %v", r.written, err)
		}
		r.written++
	}
}

// view is the sink as GET /api/sinks and GET /metrics report it.
type view struct {
	api api.SinkView
	met map[string]float64 // series of sink="mqtt" by name and reason label
}

func (v view) accounted() uint64 {
	n := v.api.Delivered + v.api.Undeliverable + v.api.Depth
	for _, d := range v.api.Dropped {
		n += d
	}
	return n
}

func (r *diskFullRig) get(path string) []byte {
	r.t.Helper()
	resp, err := http.Get(r.url + path)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		r.t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, b)
	}
	return b
}

func (r *diskFullRig) view() view {
	r.t.Helper()
	var body struct{ Sinks []api.SinkView }
	if err := json.Unmarshal(r.get("/api/sinks"), &body); err != nil || len(body.Sinks) != 1 {
		r.t.Fatalf("/api/sinks: %v %+v", err, body)
	}
	v := view{api: body.Sinks[0], met: map[string]float64{}}
	for line := range strings.Lines(string(r.get("/metrics"))) {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), "{")
		if !ok || !strings.HasPrefix(name, "vinfer_sink_") {
			continue
		}
		labels, val, _ := strings.Cut(rest, "} ")
		if !strings.Contains(labels, `sink="mqtt"`) {
			continue
		}
		if _, reason, ok := strings.Cut(labels, `reason="`); ok {
			name += ":" + reason[:strings.IndexByte(reason, '"')]
		}
		f, err := strconv.ParseFloat(val, 64)
		if err != nil {
			r.t.Fatalf("/metrics line %q", line)
		}
		v.met[name] = f
	}
	return v
}

// check asserts that the API and /metrics agree and that every record written is delivered,
// undeliverable, dropped or pending (docs/events.md, "Counted exactly"), and returns the view.
// Call it while nothing is being delivered (the broker down, or everything delivered).
func (r *diskFullRig) check(state string) view {
	r.t.Helper()
	v := r.view()
	if got := v.accounted(); got != r.written {
		r.t.Fatalf("delivered+undeliverable+dropped+depth = %d, written %d: %+v", got, r.written, v.api)
	}
	full := 0.0
	if state == api.OutboxDiskFull {
		full = 1
	}
	if v.api.Outbox != state || (v.api.DiskFullSince != nil) != (state == api.OutboxDiskFull) ||
		v.met["vinfer_sink_outbox_disk_full"] != full {
		r.t.Fatalf("state: want %s; API %s since %v, /metrics %v", state, v.api.Outbox, v.api.DiskFullSince,
			v.met["vinfer_sink_outbox_disk_full"])
	}
	for reason, n := range v.api.Dropped {
		if m := v.met["vinfer_sink_dropped_total:"+reason]; m != float64(n) {
			r.t.Fatalf("dropped %s: API %d, /metrics %v", reason, n, m)
		}
	}
	if v.met["vinfer_sink_delivered_total"] != float64(v.api.Delivered) ||
		v.met["vinfer_sink_outbox_depth"] != float64(v.api.Depth) {
		r.t.Fatalf("API %+v, /metrics %v", v.api, v.met)
	}
	return v
}

// fillUp produces events until the API reports the outbox's disk full, then 100 more, and
// checks that those were all counted dropped (disk_full) with one log line.
func (r *diskFullRig) fillUp() view {
	r.t.Helper()
	for r.view().api.Outbox != api.OutboxDiskFull {
		if r.written > 100_000 {
			r.t.Fatal("the outbox's file system never filled up")
		}
		r.produce(50)
	}
	before := r.check(api.OutboxDiskFull)
	r.produce(100)
	v := r.check(api.OutboxDiskFull)
	if d := v.api.Dropped["disk_full"] - before.api.Dropped["disk_full"]; d != 100 {
		r.t.Fatalf("%d of 100 records written to a full disk counted dropped", d)
	}
	if v.api.Depth != before.api.Depth {
		r.t.Fatalf("depth moved on a full disk: %d → %d", before.api.Depth, v.api.Depth)
	}
	return v
}

// resume produces one event once space has returned and checks it was written: the state is
// ok again, with one log line for each change.
func (r *diskFullRig) resume(episodes int) {
	r.t.Helper()
	dropped := r.view().api.Dropped["disk_full"]
	r.produce(1)
	v := r.check(api.OutboxOK)
	if v.api.Dropped["disk_full"] != dropped {
		r.t.Fatalf("a record written after space returned was dropped: %+v", v.api)
	}
	if n, m := r.logs.Count("outbox: disk full"), r.logs.Count("outbox: writing records again"); n != episodes || m != episodes {
		r.t.Fatalf("%d disk-full and %d writing-again log lines, want %d each", n, m, episodes)
	}
}

// deliverAll starts the broker and waits until every record not dropped is delivered.
func (r *diskFullRig) deliverAll() {
	r.t.Helper()
	b := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	b.AddHook(new(auth.AllowHook), nil)
	if err := b.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: r.addr})); err != nil {
		r.t.Fatal(err)
	}
	if err := b.Serve(); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { b.Close() })
	// The worker acknowledges a batch, then counts it delivered: wait for both.
	testutil.Eventually(r.t, diskFullWait, "the outbox delivered", func() bool {
		v := r.view().api
		return v.Depth == 0 && v.Delivered+v.Dropped["disk_full"] == r.written
	})
	v := r.check(api.OutboxOK)
	if v.api.Delivered+v.api.Dropped["disk_full"] != r.written || !v.api.Up {
		r.t.Fatalf("written %d: %+v", r.written, v.api)
	}
}

// TestSinkDiskFull drives a sink whose broker is down and whose outbox is on a small file
// system (a 2 MiB tmpfs the test mounts; skipped unless root): events are produced until the
// disk fills (a file of the test's own takes most of it), every record that cannot be written
// is counted dropped (disk_full) with the state reported by GET /api/sinks and /metrics and
// one log line, the accounting identity holds throughout, the file is removed, writing
// resumes by itself, and once the broker is up everything written is delivered.
func TestSinkDiskFull(t *testing.T) {
	dir := testutil.SmallFS(t, 2<<20)
	r := newDiskFullRig(t, filepath.Join(dir, "outbox"))
	r.produce(10)
	r.check(api.OutboxOK)

	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	fill := filepath.Join(dir, "other")
	if err := os.WriteFile(fill, make([]byte, int64(fs.Bavail)*fs.Bsize-256<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	r.fillUp()
	if err := os.Remove(fill); err != nil {
		t.Fatal(err)
	}
	r.resume(1)
	r.produce(100)
	r.check(api.OutboxOK)
	r.deliverAll()
}

// TestSinkDiskFullFileSizeLimit is TestSinkDiskFull without privileges: the file size limit
// (RLIMIT_FSIZE, a few bytes; Go ignores SIGXFSZ, so writes past it fail with EFBIG) stands
// for the full disk, and raising it again for the space that returns.
func TestSinkDiskFullFileSizeLimit(t *testing.T) {
	r := newDiskFullRig(t, filepath.Join(t.TempDir(), "outbox"))
	r.produce(10)
	r.check(api.OutboxOK)

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	// Room for a segment's header, not for a record.
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 64, Max: old.Max}); err != nil {
		t.Skipf("cannot set RLIMIT_FSIZE: %v", err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(restore)
	r.fillUp()
	restore()
	r.resume(1)
	r.produce(100)
	r.check(api.OutboxOK)
	r.deliverAll()
}
