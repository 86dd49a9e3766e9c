package nats_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	bt "github.com/vinfer/vinfer/internal/testutil/brokertest"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
	vnats "github.com/vinfer/vinfer/sink/nats"
)

// startServer starts a nats-server with JetStream on 127.0.0.1:port (-1: any) storing in dir.
func startServer(t testing.TB, port int, dir string, mod func(*server.Options)) *server.Server {
	t.Helper()
	o := &server.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true}
	if mod != nil {
		mod(o)
	}
	s, err := server.NewServer(o)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	return s
}

func openSink(t testing.TB, dir string, settings map[string]any) *brokered.Sink {
	t.Helper()
	return bt.OpenSink(t, "nats", vnats.Open, dir, settings)
}

// streamIDs reads every message of a JetStream stream and counts them by Nats-Msg-Id.
func streamIDs(t testing.TB, url, stream string) *bt.Seen {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), bt.Timeout)
	defer cancel()
	st, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	seen := &bt.Seen{}
	for n := uint64(0); n < info.State.Msgs; {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for m := range batch.Messages() {
			seen.Add(m.Headers().Get(jetstream.MsgIDHeader))
			n++
		}
		if batch.Error() != nil {
			t.Fatal(batch.Error())
		}
	}
	return seen
}

func TestSubject(t *testing.T) {
	t.Parallel()
	if s := vnats.Subject("vinfer", []byte("cam.1"), []byte("zone.enter")); s != "vinfer.cam_1.zone.enter" {
		t.Fatal(s)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, m := range []map[string]any{{}, {"url": "nats://x", "prefix": "a.*"}, {"url": "nats://x", "tls": map[string]any{"ca": "/nonexistent"}}} {
		if _, err := vnats.Open(config.NewSink("nats", m), sink.Env{Dir: t.TempDir()}); err == nil {
			t.Fatalf("%v accepted", m)
		}
	}
}

func TestCoreNATS(t *testing.T) {
	t.Parallel()
	srv := startServer(t, -1, t.TempDir(), nil)
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	seen := &bt.Seen{}
	det := 0
	sub, err := nc.Subscribe("vinfer.>", func(m *nats.Msg) {
		if strings.HasSuffix(m.Subject, ".detections") {
			det++
			return
		}
		if m.Subject != "vinfer.cam1.zone.enter" || m.Header.Get("Vinfer-Stream") != "cam1" {
			t.Errorf("subject %s", m.Subject)
		}
		seen.Add(m.Header.Get(jetstream.MsgIDHeader))
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()
	k := openSink(t, t.TempDir(), map[string]any{"url": srv.ClientURL(), "carry": "both"})
	for i := range 100 {
		k.Write(bt.Result("cam1", int64(i), 2))
	}
	bt.Wait(t, bt.Timeout, func() bool { return seen.Distinct() == 200 }, "200 events (have %d)", seen.Distinct())
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if st := k.Stats(); st.Delivered != 300 || !st.Up {
		t.Fatalf("stats %+v", st)
	}
}

// The server stops mid-stream and comes back: every event reaches the stream exactly once
// (JetStream dedupes the retried ones by Nats-Msg-Id).
func TestJetStreamRestart(t *testing.T) {
	t.Parallel()
	port, store := testutil.FreePort(t), t.TempDir()
	srv := startServer(t, port, store, nil)
	url := srv.ClientURL()
	k := openSink(t, t.TempDir(), map[string]any{"url": url, "jetstream": true, "stream": "VINFER"})
	// One goroutine writes 2 events per result, paced, until the broker is back.
	stop := bt.Feed(k)
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Delivered > 100 }, "first deliveries")
	srv.Shutdown()
	srv.WaitForShutdown()
	bt.Wait(t, bt.Timeout, func() bool { return !k.Stats().Up }, "sink down")
	time.Sleep(bt.Outage(t))
	srv = startServer(t, port, store, nil)
	defer srv.Shutdown()
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Up }, "sink up again")
	total := uint64(stop())
	bt.Wait(t, bt.Timeout+bt.Outage(t), func() bool { return k.Stats().Delivered >= total && k.Stats().Depth == 0 },
		"all delivered (stats %+v)", k.Stats())
	st := k.Stats()
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if !st.Up || st.Failed == 0 {
		t.Fatalf("stats %+v", st)
	}
	seen := streamIDs(t, url, "VINFER")
	if seen.Distinct() != int(total) || seen.Dups() != 0 {
		t.Fatalf("stream holds %d distinct events, %d duplicates; want %d, 0", seen.Distinct(), seen.Dups(), total)
	}
}

// A server that is not there when the sink opens: the sink opens, reports down, and delivers
// once the server starts.
func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	port := testutil.FreePort(t)
	url := "nats://127.0.0.1:" + strconv.Itoa(port)
	k := openSink(t, t.TempDir(), map[string]any{"url": url, "jetstream": true, "stream": "VINFER"})
	for i := range 50 {
		k.Write(bt.Result("cam1", int64(i), 1))
	}
	bt.Wait(t, bt.Timeout, func() bool { st := k.Stats(); return !st.Up && st.Failed > 1 && st.Depth == 50 }, "down with depth 50")
	if st := k.Stats(); !strings.Contains(st.LastError, "not connected") {
		t.Fatalf("last error %q", st.LastError)
	}
	srv := startServer(t, port, t.TempDir(), nil)
	defer srv.Shutdown()
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Delivered == 50 }, "50 delivered")
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	srv := startServer(t, -1, t.TempDir(), func(o *server.Options) { o.Username, o.Password = "vinfer", "right-secret" })
	defer srv.Shutdown()
	k := openSink(t, t.TempDir(), map[string]any{"url": srv.ClientURL(), "user": "vinfer", "password": "wrong-secret"})
	k.Write(bt.Result("cam1", 0, 1))
	bt.Wait(t, bt.Timeout, func() bool { return strings.Contains(k.Stats().LastError, "uthorization") },
		"an authorization error in stats (last error %q)", k.Stats().LastError)
	if e := k.Stats().LastError; strings.Contains(e, "secret") {
		t.Fatalf("password in error: %q", e)
	}
	k.Close()
}

const childEnv = "VINFER_NATS_CHILD"

// TestKillChild is TestKill's child (brokertest.RunChild) on a JetStream sink.
func TestKillChild(t *testing.T) {
	url, dir, mode, ok := bt.Child(childEnv)
	if !ok {
		t.Skip("child of TestKill")
	}
	k := openSink(t, dir, map[string]any{"url": url, "jetstream": true, "stream": "VINFER", "drain_timeout": "60s"})
	bt.RunChild(t, k, mode)
}

// TestKill kills a process writing to a JetStream sink with SIGKILL mid-stream, twice, then
// starts it again: every event whose Write returned reaches the stream, once (JetStream
// deduplicates by Nats-Msg-Id).
func TestKill(t *testing.T) {
	t.Parallel()
	srv := startServer(t, -1, t.TempDir(), nil)
	defer srv.Shutdown()
	written := bt.Kill(t, "TestKillChild", childEnv, srv.ClientURL())
	seen := streamIDs(t, srv.ClientURL(), "VINFER")
	if lost := bt.Lost(written, seen); lost > 0 || seen.Dups() > 0 {
		t.Fatalf("%d of %d written events lost, %d duplicates", lost, len(written), seen.Dups())
	}
	t.Logf("%d events written across 2 kills, all in the stream (%d distinct, %d duplicates)", len(written), seen.Distinct(), seen.Dups())
}

// Mutual TLS: the server requires a client certificate from the test CA.
func TestTLS(t *testing.T) {
	t.Parallel()
	certs := bt.NewCerts(t)
	srv := startServer(t, -1, t.TempDir(), func(o *server.Options) { o.TLSConfig, o.TLSVerify = certs.Server, true })
	defer srv.Shutdown()
	url := "tls://" + srv.Addr().String()
	k := openSink(t, t.TempDir(), map[string]any{"url": url, "jetstream": true, "stream": "VINFER", "tls": certs.TLSSettings()})
	for i := range 10 {
		k.Write(bt.Result("cam1", int64(i), 1))
	}
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Delivered == 10 }, "10 delivered over TLS (stats %+v)", k.Stats())
}

// TestLatency measures event-to-subscriber latency through JetStream at 1000 events/s
// (VINFER_BENCH=1).
func TestLatency(t *testing.T) {
	t.Parallel()
	l := &bt.Latency{}
	if os.Getenv("VINFER_BENCH") == "" {
		bt.RunLatency(t, "", nil, l, 0)
	}
	srv := startServer(t, -1, t.TempDir(), nil)
	defer srv.Shutdown()
	k := openSink(t, t.TempDir(), map[string]any{"url": srv.ClientURL(), "jetstream": true, "stream": "VINFER"})
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Subscribe("vinfer.>", func(m *nats.Msg) { l.Received(m.Header.Get(jetstream.MsgIDHeader)) })
	nc.Flush()
	bt.RunLatency(t, "nats jetstream", k, l, 1000)
}
