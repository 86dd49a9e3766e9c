package kafka_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	bt "github.com/vinfer/vinfer/internal/testutil/brokertest"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
	"github.com/vinfer/vinfer/sink/kafka"
)

func startCluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(),
		kfake.SeedTopics(3, "vinfer-events")}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func openSink(t testing.TB, settings map[string]any) *brokered.Sink {
	t.Helper()
	return bt.OpenSink(t, "kafka", kafka.Open, t.TempDir(), settings)
}

// consume reads topic from the start until want records arrived (or the timeout), counting
// them by the vinfer-id header and checking keys.
func consume(t testing.TB, addrs []string, topic string, want int) *bt.Seen {
	t.Helper()
	return consumeUntil(t, addrs, topic, func(s *bt.Seen) bool { return s.Distinct()+s.Dups() >= want })
}

// consumeUntil reads topic from the start until done, called after each fetch, returns true
// (or the timeout), counting the records by the vinfer-id header and checking keys.
func consumeUntil(t testing.TB, addrs []string, topic string, done func(*bt.Seen) bool) *bt.Seen {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	seen := &bt.Seen{}
	ctx, cancel := context.WithTimeout(context.Background(), bt.Timeout)
	defer cancel()
	for stop := false; !stop && ctx.Err() == nil; {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			if len(r.Key) == 0 {
				t.Errorf("record without key")
			}
			for _, h := range r.Headers {
				if h.Key == "vinfer-id" {
					seen.Add(string(h.Value))
				}
			}
		})
		stop = done(seen)
	}
	return seen
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, m := range []map[string]any{{}, {"brokers": []string{"x:1"}, "acks": "some"},
		{"brokers": []string{"x:1"}, "sasl": map[string]any{"mechanism": "GSSAPI"}}} {
		if _, err := kafka.Open(config.NewSink("kafka", m), sink.Env{Dir: t.TempDir()}); err == nil {
			t.Fatalf("%v accepted", m)
		}
	}
}

func TestProduce(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	defer c.Close()
	k := openSink(t, map[string]any{"brokers": c.ListenAddrs(), "carry": "both"})
	for i := range 100 {
		k.Write(bt.Result("cam1", int64(i), 1))
		k.Write(bt.Result("cam2", int64(i), 1))
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	if st := k.Stats(); st.Delivered != 400 || st.Failed != 0 {
		t.Fatalf("stats %+v", st)
	}
	if seen := consume(t, c.ListenAddrs(), "vinfer-events", 200); seen.Distinct() != 200 || seen.Dups() != 0 {
		t.Fatalf("%d events, %d dups", seen.Distinct(), seen.Dups())
	}
	if seen := consume(t, c.ListenAddrs(), "vinfer-detections", 200); seen.Distinct() != 200 {
		t.Fatalf("%d detection records", seen.Distinct())
	}
}

// The cluster stops mid-stream (its data kept on disk) and starts again on the same port:
// every event arrives, counted by id.
func TestRestart(t *testing.T) {
	t.Parallel()
	port, data := testutil.FreePort(t), t.TempDir()
	c := startCluster(t, kfake.Ports(port), kfake.DataDir(data))
	addrs := c.ListenAddrs()
	k := openSink(t, map[string]any{"brokers": addrs})
	// One goroutine writes 2 events per result, paced, until the broker is back.
	stop := bt.Feed(k)
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Delivered > 100 }, "first deliveries")
	c.Close()
	bt.Wait(t, bt.Timeout, func() bool { return !k.Stats().Up }, "sink down")
	time.Sleep(bt.Outage(t))
	c = startCluster(t, kfake.Ports(port), kfake.DataDir(data))
	defer c.Close()
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Up }, "sink up again")
	total := uint64(stop())
	bt.Wait(t, bt.Timeout+bt.Outage(t), func() bool { st := k.Stats(); return st.Delivered >= total && st.Depth == 0 },
		"all delivered (stats %+v)", k.Stats())
	st := k.Stats()
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	seen := consume(t, addrs, "vinfer-events", int(total))
	if seen.Distinct() != int(total) {
		t.Fatalf("%d distinct events in the topic, want %d", seen.Distinct(), total)
	}
	t.Logf("%d events, %d duplicates (dropped by id downstream); failed attempts %d", seen.Distinct(), seen.Dups(), st.Failed)
}

func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	port := testutil.FreePort(t)
	k := openSink(t, map[string]any{"brokers": []string{"127.0.0.1:" + strconv.Itoa(port)}, "timeout": "1s"})
	for i := range 50 {
		k.Write(bt.Result("cam1", int64(i), 1))
	}
	bt.Wait(t, bt.Timeout, func() bool { st := k.Stats(); return !st.Up && st.Failed > 1 && st.Depth == 50 }, "down with depth 50")
	if e := k.Stats().LastError; !strings.Contains(e, "connection refused") {
		t.Fatalf("last error %q", e)
	}
	c := startCluster(t, kfake.Ports(port))
	defer c.Close()
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Delivered == 50 }, "50 delivered (stats %+v)", k.Stats())
	k.Close()
}

func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	c := startCluster(t, kfake.EnableSASL(), kfake.Superuser("PLAIN", "vinfer", "right-secret"))
	defer c.Close()
	k := openSink(t, map[string]any{"brokers": c.ListenAddrs(), "timeout": "2s",
		"sasl": map[string]any{"mechanism": "PLAIN", "user": "vinfer", "password": "wrong-secret"}})
	k.Write(bt.Result("cam1", 0, 1))
	bt.Wait(t, bt.Timeout, func() bool { return strings.Contains(strings.ToUpper(k.Stats().LastError), "SASL") },
		"a SASL error in stats (last error %q)", k.Stats().LastError)
	if e := k.Stats().LastError; strings.Contains(e, "secret") {
		t.Fatalf("password in error: %q", e)
	}
	t.Logf("last error: %s", k.Stats().LastError)
	k.Close()
}

// Mutual TLS: the cluster requires a client certificate from the test CA.
func TestTLS(t *testing.T) {
	t.Parallel()
	certs := bt.NewCerts(t)
	c := startCluster(t, kfake.TLS(certs.Server))
	defer c.Close()
	k := openSink(t, map[string]any{"brokers": c.ListenAddrs(), "tls": certs.TLSSettings()})
	for i := range 10 {
		k.Write(bt.Result("cam1", int64(i), 1))
	}
	bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Delivered == 10 }, "10 delivered over TLS (stats %+v)", k.Stats())
}

// TestLatency measures event-to-consumer latency at 1000 events/s (VINFER_BENCH=1).
func TestLatency(t *testing.T) {
	t.Parallel()
	l := &bt.Latency{}
	if os.Getenv("VINFER_BENCH") == "" {
		bt.RunLatency(t, "", nil, l, 0)
	}
	c := startCluster(t)
	defer c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics("vinfer-events"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				for _, h := range r.Headers {
					if h.Key == "vinfer-id" {
						l.Received(string(h.Value))
					}
				}
			})
		}
	}()
	k := openSink(t, map[string]any{"brokers": c.ListenAddrs()})
	bt.RunLatency(t, "kafka", k, l, 1000)
}

const childEnv = "VINFER_KAFKA_CHILD"

// TestKillChild is TestKill's child (brokertest.RunChild).
func TestKillChild(t *testing.T) {
	addrs, dir, mode, ok := bt.Child(childEnv)
	if !ok {
		t.Skip("child of TestKill")
	}
	k := openSink(t, map[string]any{"brokers": strings.Split(addrs, ","), "outbox": map[string]any{"dir": dir}, "drain_timeout": "60s"})
	bt.RunChild(t, k, mode)
}

// TestKill kills a process producing to Kafka with SIGKILL mid-stream, twice, then starts it
// again on the same outbox: every event whose Write returned is in the topic, at least once
// (a new process is a new idempotent producer, so a batch in flight at the kill may repeat;
// duplicates counted).
func TestKill(t *testing.T) {
	t.Parallel()
	c := startCluster(t)
	defer c.Close()
	written := bt.Kill(t, "TestKillChild", childEnv, strings.Join(c.ListenAddrs(), ","))
	seen := consumeUntil(t, c.ListenAddrs(), "vinfer-events", func(s *bt.Seen) bool { return bt.Lost(written, s) == 0 })
	if lost := bt.Lost(written, seen); lost > 0 {
		t.Fatalf("%d of %d written events not in the topic", lost, len(written))
	}
	t.Logf("%d events written across 2 kills, all in the topic (%d distinct, %d duplicates)", len(written), seen.Distinct(), seen.Dups())
}
