package webhook_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	bt "github.com/vinfer/vinfer/internal/testutil/brokertest"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
	"github.com/vinfer/vinfer/sink/webhook"
)

var sinkSeq atomic.Int64

func openSink(t testing.TB, settings map[string]any) *brokered.Sink {
	t.Helper()
	base := map[string]any{"min_backoff": "20ms", "max_backoff": "500ms"}
	if _, ok := settings["name"]; !ok { // tests run in parallel: one name each
		base["name"] = fmt.Sprintf("%s-%d", "webhook", sinkSeq.Add(1))
	}
	for k, v := range settings {
		base[k] = v
	}
	s, err := webhook.Open(config.NewSink("webhook", base), sink.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return s.(*brokered.Sink)
}

// receiver checks signatures and counts events by id.
type receiver struct {
	t      testing.TB
	secret string
	seen   bt.Seen
	other  atomic.Int64 // detection messages
	hook   func(w http.ResponseWriter, r *http.Request) bool
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if rc.hook != nil && !rc.hook(w, r) {
		return
	}
	body, _ := io.ReadAll(r.Body)
	sig := r.Header.Get(webhook.SignatureHeader)
	ts, _, _ := strings.Cut(strings.TrimPrefix(sig, "t="), ",")
	sec, _ := strconv.ParseInt(ts, 10, 64)
	want := ""
	if rc.secret != "" {
		want = webhook.Sign([]byte(rc.secret), time.Unix(sec, 0), body)
	}
	if sig != want || r.Method != http.MethodPost {
		rc.t.Errorf("signature %q, want %q", sig, want)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var msgs []map[string]any
	if body[0] == '[' {
		json.Unmarshal(body, &msgs)
	} else {
		var m map[string]any
		json.Unmarshal(body, &m)
		msgs = append(msgs, m)
		if id, _ := m["id"].(string); id != "" && id != r.Header.Get("X-Vinfer-Event-Id") {
			rc.t.Errorf("id header %q, body %q", r.Header.Get("X-Vinfer-Event-Id"), id)
		}
	}
	for _, m := range msgs {
		if id, ok := m["id"].(string); ok {
			rc.seen.Add(id)
		} else {
			rc.other.Add(1)
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"", "ftp://host/x", "file:///etc/passwd", "http://", "host:80/x"} {
		_, err := webhook.Open(config.NewSink("webhook", map[string]any{"url": u}), sink.Env{Dir: t.TempDir()})
		if !errors.Is(err, webhook.ErrURL) {
			t.Fatalf("%q: err %v", u, err)
		}
	}
}

func TestDeliver(t *testing.T) {
	t.Parallel()
	for _, batch := range []bool{false, true} {
		t.Run("batch="+strconv.FormatBool(batch), func(t *testing.T) {
			rc := &receiver{t: t, secret: "s3cret"}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			k := openSink(t, map[string]any{"url": srv.URL, "secret": "s3cret", "batch": batch, "carry": "both", "detections_every": 10})
			for i := range 100 {
				k.Write(bt.Result("cam1", int64(i), 3))
			}
			if err := k.Close(); err != nil {
				t.Fatal(err)
			}
			if rc.seen.Distinct() != 300 || rc.seen.Dups() != 0 || rc.other.Load() != 10 {
				t.Fatalf("%d events, %d dups, %d detections", rc.seen.Distinct(), rc.seen.Dups(), rc.other.Load())
			}
		})
	}
}

// An endpoint that does not answer: Write is unaffected, the depth grows; once it answers,
// everything arrives.
func TestSlowEndpoint(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	rc := &receiver{t: t, hook: func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-release:
			return true
		case <-r.Context().Done():
			return false
		}
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	k := openSink(t, map[string]any{"url": srv.URL, "timeout": "120s", "concurrency": 2})
	start := time.Now()
	for i := range 1000 {
		k.Write(bt.Result("cam1", int64(i), 1))
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("1000 writes took %v", d)
	}
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Depth == 1000 }, "depth 1000 (have %d)", k.Stats().Depth)
	if st := k.Stats(); st.Delivered != 0 || st.OldestAge <= 0 {
		t.Fatalf("stats %+v", st)
	}
	close(release)
	bt.Wait(t, bt.Timeout, func() bool { return rc.seen.Distinct() == 1000 }, "1000 events (have %d)", rc.seen.Distinct())
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestUnreachableAtStartAndUndeliverable(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	k := openSink(t, map[string]any{"url": "http://" + addr + "/hook", "secret": "x"})
	results := make([]*sink.Result, 20)
	for i := range results {
		results[i] = bt.Result("cam1", int64(i), 1)
		k.Write(results[i])
	}
	bt.Wait(t, bt.Timeout, func() bool { st := k.Stats(); return !st.Up && st.Failed > 1 }, "sink down")
	if e := k.Stats().LastError; !strings.Contains(e, "connection refused") {
		t.Fatalf("last error %q", e)
	}
	reject := results[7].Events[0].ID.String()
	rc := &receiver{t: t, secret: "x", hook: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("X-Vinfer-Event-Id") == reject {
			w.WriteHeader(http.StatusBadRequest)
			return false
		}
		return true
	}}
	if l, err = net.Listen("tcp", addr); err != nil {
		t.Skipf("port taken meanwhile: %v", err)
	}
	srv := &http.Server{Handler: rc}
	go srv.Serve(l)
	defer srv.Close()
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Depth == 0 }, "delivered")
	if st := k.Stats(); rc.seen.Distinct() != 19 || st.Undeliverable != 1 || !st.Up {
		t.Fatalf("%d events, stats %+v", rc.seen.Distinct(), st)
	}
	k.Close()
}

func TestRedirects(t *testing.T) {
	t.Parallel()
	rc := &receiver{t: t}
	other := httptest.NewServer(rc)
	defer other.Close()
	var same *httptest.Server
	same = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/away":
			http.Redirect(w, r, other.URL+"/x", http.StatusTemporaryRedirect)
		case "/moved":
			http.Redirect(w, r, same.URL+"/here", http.StatusPermanentRedirect)
		case "/found":
			http.Redirect(w, r, same.URL+"/here", http.StatusFound)
		case "/here":
			rc.ServeHTTP(w, r)
		}
	}))
	defer same.Close()
	k := openSink(t, map[string]any{"url": same.URL + "/moved", "name": "moved"})
	k.Write(bt.Result("cam1", 0, 1))
	bt.Wait(t, bt.Timeout, func() bool { return rc.seen.Distinct() == 1 }, "308 followed")
	k.Close()
	for _, path := range []string{"/away", "/found"} {
		k := openSink(t, map[string]any{"url": same.URL + path, "name": path[1:]})
		k.Write(bt.Result("cam1", 0, 1))
		bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Failed > 0 }, "%s refused", path)
		k.Close()
	}
	if rc.seen.Distinct() != 1 {
		t.Fatalf("%d events arrived", rc.seen.Distinct())
	}
}

// TestLatency measures event-to-endpoint latency at 1000 events/s (VINFER_BENCH=1).
func TestLatency(t *testing.T) {
	t.Parallel()
	l := &bt.Latency{}
	if os.Getenv("VINFER_BENCH") == "" {
		bt.RunLatency(t, "", nil, l, 0)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.Received(r.Header.Get("X-Vinfer-Event-Id"))
	}))
	defer srv.Close()
	k := openSink(t, map[string]any{"url": srv.URL})
	bt.RunLatency(t, "webhook", k, l, 1000)
}

const childEnv = "VINFER_WEBHOOK_CHILD"

// TestKillChild is TestKill's child (brokertest.RunChild).
func TestKillChild(t *testing.T) {
	url, dir, mode, ok := bt.Child(childEnv)
	if !ok {
		t.Skip("child of TestKill")
	}
	k := openSink(t, map[string]any{"url": url, "secret": "s3cret", "outbox": map[string]any{"dir": dir}, "drain_timeout": "60s"})
	bt.RunChild(t, k, mode)
}

// TestKill kills a process posting to a webhook with SIGKILL mid-stream, twice, then starts it
// again on the same outbox: every event whose Write returned reaches the endpoint, at least
// once (requests in flight at the kill are sent again; duplicates counted).
func TestKill(t *testing.T) {
	t.Parallel()
	rc := &receiver{t: t, secret: "s3cret"}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	written := bt.Kill(t, "TestKillChild", childEnv, srv.URL)
	if lost := bt.Lost(written, &rc.seen); lost > 0 {
		t.Fatalf("%d of %d written events lost", lost, len(written))
	}
	t.Logf("%d events written across 2 kills, all received (%d distinct, %d duplicates)", len(written), rc.seen.Distinct(), rc.seen.Dups())
}
