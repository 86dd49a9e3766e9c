package mqtt_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	paho3 "github.com/eclipse/paho.mqtt.golang"
	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/testutil"
	bt "github.com/vinfer/vinfer/internal/testutil/brokertest"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
	"github.com/vinfer/vinfer/sink/mqtt"
)

// received counts what an embedded broker's inline subscriber saw.
type received struct {
	events     bt.Seen
	mu         sync.Mutex
	detections int
	counts     int
	available  []string
	badTopic   string
}

func (r *received) handle(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case pk.TopicName == "vinfer/available":
		r.available = append(r.available, string(pk.Payload))
	case pk.TopicName == "vinfer/cam1/detections":
		r.detections++
	case pk.TopicName == "vinfer/cam1/door/count":
		r.counts++
	case pk.TopicName == "vinfer/cam1/events":
		var e struct{ ID string }
		json.Unmarshal(pk.Payload, &e)
		r.events.Add(e.ID)
	default:
		r.badTopic = pk.TopicName
	}
}

func (r *received) lastAvailable() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.available) == 0 {
		return ""
	}
	return r.available[len(r.available)-1]
}

// startBroker starts a mochi broker on addr feeding r; users, when set, are the only
// username/password pairs allowed.
func startBroker(t testing.TB, addr string, r *received, users map[string]string) *mochi.Server {
	t.Helper()
	s := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if users == nil {
		s.AddHook(new(auth.AllowHook), nil)
	} else {
		var rules auth.AuthRules
		for u, p := range users {
			rules = append(rules, auth.AuthRule{Username: auth.RString(u), Password: auth.RString(p), Allow: true})
		}
		if err := s.AddHook(new(auth.Hook), &auth.Options{Ledger: &auth.Ledger{Auth: rules,
			ACL: auth.ACLRules{{Filters: auth.Filters{"#": auth.ReadWrite}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: addr})); err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(); err != nil {
		t.Fatal(err)
	}
	if r != nil {
		if err := s.Subscribe("vinfer/#", 1, r.handle); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func openSink(t testing.TB, settings map[string]any) *brokered.Sink {
	t.Helper()
	return bt.OpenSink(t, "mqtt", mqtt.Open, t.TempDir(), settings)
}

var protocols = []string{"3.1.1", "5"}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, m := range []map[string]any{{}, {"url": "http://x:1"}, {"url": "mqtt://x:1", "protocol": "4"},
		{"url": "mqtt://x:1", "qos": 3}, {"url": "mqtt://x:1", "prefix": "a/#"}, {"url": "mqtt://u:p@x:1"}} {
		if _, err := mqtt.Open(config.NewSink("mqtt", m), sink.Env{Dir: t.TempDir()}); err == nil {
			t.Fatalf("%v accepted", m)
		}
	}
}

func TestPublish(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			addr, r := testutil.FreeAddr(t), &received{}
			b := startBroker(t, addr, r, nil)
			defer b.Close()
			k := openSink(t, map[string]any{"url": "mqtt://" + addr, "protocol": proto, "carry": "both", "detections_every": 2})
			for i := range 100 {
				k.Write(bt.Result("cam1", int64(i), 2))
			}
			bt.Wait(t, bt.Timeout, func() bool { return r.events.Distinct() == 200 }, "200 events (have %d)", r.events.Distinct())
			bt.Wait(t, bt.Timeout, func() bool { return r.lastAvailable() == "online" }, "online")
			if err := k.Close(); err != nil {
				t.Fatal(err)
			}
			bt.Wait(t, bt.Timeout, func() bool { return r.lastAvailable() == "offline" }, "offline")
			r.mu.Lock()
			defer r.mu.Unlock()
			if r.detections != 50 || r.badTopic != "" || r.events.Dups() != 0 || r.counts == 0 || r.counts > 100 {
				t.Fatalf("%d detections, %d counts, topic %q, %d dups", r.detections, r.counts, r.badTopic, r.events.Dups())
			}
		})
	}
}

// The broker stops mid-stream and a new one starts on the same address: every event arrives,
// counted by id across both.
func TestRestart(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			addr, r := testutil.FreeAddr(t), &received{}
			b := startBroker(t, addr, r, nil)
			k := openSink(t, map[string]any{"url": "mqtt://" + addr, "protocol": proto})
			stop := bt.Feed(k)
			bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Delivered > 100 }, "first deliveries")
			b.Close()
			bt.Wait(t, bt.Timeout, func() bool { return !k.Stats().Up }, "sink down")
			time.Sleep(bt.Outage(t))
			b = startBroker(t, addr, r, nil)
			defer b.Close()
			bt.Wait(t, bt.Timeout, func() bool { return k.Stats().Up }, "sink up again")
			total := stop()
			bt.Wait(t, bt.Timeout, func() bool { return r.events.Distinct() == total }, "%d events (have %d)", total, r.events.Distinct())
			t.Logf("%d events, %d duplicates (dropped by id downstream), stats %+v", total, r.events.Dups(), k.Stats())
		})
	}
}

func TestUnreachableAtStart(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			addr, r := testutil.FreeAddr(t), &received{}
			k := openSink(t, map[string]any{"url": "mqtt://" + addr, "protocol": proto})
			for i := range 50 {
				k.Write(bt.Result("cam1", int64(i), 1))
			}
			// 50 events and 50 count records (each result changes the zone door's counts)
			bt.Wait(t, bt.Timeout, func() bool { st := k.Stats(); return !st.Up && st.Failed > 1 && st.Depth == 100 }, "down with depth 100")
			if e := k.Stats().LastError; !strings.Contains(e, "not connected") {
				t.Fatalf("last error %q", e)
			}
			b := startBroker(t, addr, r, nil)
			defer b.Close()
			bt.Wait(t, bt.Timeout, func() bool { return r.events.Distinct() == 50 }, "50 events")
		})
	}
}

func TestWrongCredentials(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			addr, r := testutil.FreeAddr(t), &received{}
			b := startBroker(t, addr, r, map[string]string{"vinfer": "right-secret"})
			defer b.Close()
			k := openSink(t, map[string]any{"url": "mqtt://" + addr, "protocol": proto, "username": "vinfer", "password": "wrong-secret"})
			k.Write(bt.Result("cam1", 0, 1))
			bt.Wait(t, bt.Timeout, func() bool {
				e := strings.ToLower(k.Stats().LastError)
				return strings.Contains(e, "authori") || strings.Contains(e, "password")
			}, "an authorization error in stats (last error %q)", k.Stats().LastError)
			if e := k.Stats().LastError; strings.Contains(e, "secret") {
				t.Fatalf("password in error: %q", e)
			}
			t.Logf("last error: %s", k.Stats().LastError)
		})
	}
}

func TestTopic(t *testing.T) {
	t.Parallel()
	if s := mqtt.Topic("site/a", []byte("cam1"), brokered.KindEvent); s != "site/a/cam1/events" {
		t.Fatal(s)
	}
	// Count topic levels: reversible percent-encoding, distinct names give distinct levels.
	cases := []struct{ name, level string }{
		{"table", "table"},
		{"a_b", "a_b"},
		{"a/b", "a%2Fb"},
		{"a+b", "a%2Bb"},
		{"a#b", "a%23b"},
		{"50%", "50%25"},
		{"a\x00b\x1f\x7f", "a%00b%1F%7F"},
		{"bad\xff", "bad%FF"},
		{"Küche ☕", "Küche ☕"},
	}
	seen := map[string]string{}
	for _, c := range cases {
		s := mqtt.CountTopic("vinfer", []byte("cam1"), []byte(c.name))
		if s != "vinfer/cam1/"+c.level+"/count" {
			t.Errorf("%q: %s, want level %s", c.name, s, c.level)
		}
		if back, err := url.PathUnescape(c.level); err != nil || back != c.name {
			t.Errorf("%q: level %s unescapes to %q, %v", c.name, c.level, back, err)
		}
		if o, ok := seen[s]; ok {
			t.Errorf("%q and %q share %s", o, c.name, s)
		}
		seen[s] = c.name
	}
}

// retained subscribes to filter as a new client and returns the messages it gets once every
// topic in want has arrived.
func retained(t *testing.T, addr, filter string, want ...string) map[string][]byte {
	t.Helper()
	var mu sync.Mutex
	got := map[string][]byte{}
	c := paho3.NewClient(paho3.NewClientOptions().AddBroker("mqtt://" + addr).SetClientID("late-subscriber"))
	if tok := c.Connect(); !tok.WaitTimeout(bt.Timeout) || tok.Error() != nil {
		t.Fatalf("connect: %v", tok.Error())
	}
	defer c.Disconnect(100)
	tok := c.Subscribe(filter, 1, func(_ paho3.Client, m paho3.Message) {
		mu.Lock()
		defer mu.Unlock()
		if !m.Retained() {
			t.Errorf("%s: not a retained message", m.Topic())
		}
		got[m.Topic()] = m.Payload()
	})
	if !tok.WaitTimeout(bt.Timeout) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	bt.Wait(t, bt.Timeout, func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range want {
			if got[w] == nil {
				return false
			}
		}
		return true
	}, "retained %v", want)
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(got)
}

// A subscriber that arrives after the counts changed gets each zone's and line's current
// counts, retained, from the broker: the last of many updates, also when MQTT 5 publishes
// them concurrently.
func TestCountTopics(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			addr := testutil.FreeAddr(t)
			b := startBroker(t, addr, nil, nil)
			defer b.Close()
			k := openSink(t, map[string]any{"url": "mqtt://" + addr, "protocol": proto})
			zoneIn, lineIn, lineOut := 0, 0, 0
			for i := range 600 {
				r := &sink.Result{Stream: "cam1", Frame: int64(i)}
				add := func(ty event.Type, zone, line string, dir event.Direction) {
					r.Events = append(r.Events, event.Event{ID: event.NewID(time.Now()), Type: ty, Stream: "cam1",
						Frame: int64(i), Time: time.Now(), TrackID: int64(i / 3), Label: "person", Zone: zone, Line: line, Direction: dir})
				}
				switch i % 3 { // tracks enter the zone; two of three leave, crossing the line
				case 0:
					add(event.ZoneEnter, "table", "", 0)
					zoneIn++
				case 1:
					if i%2 == 0 {
						add(event.ZoneLeave, "table", "", 0)
						add(event.LineCross, "", "exit/2", event.Out)
						zoneIn--
						lineOut++
					} else {
						add(event.LineCross, "", "exit/2", event.In)
						lineIn++
					}
				}
				if err := k.Write(r); err != nil {
					t.Fatal(err)
				}
			}
			bt.Wait(t, bt.Timeout, func() bool { st := k.Stats(); return st.Depth == 0 && st.Up }, "all delivered (stats %+v)", k.Stats())
			got := retained(t, addr, "vinfer/+/+/count", "vinfer/cam1/table/count", "vinfer/cam1/exit%2F2/count")
			var zone struct {
				Stream, Zone string
				Objects      int
				Enter, Leave int
				Frame        int64
				Classes      map[string]map[string]int
			}
			var line struct {
				Line    string
				In, Out int
				Frame   int64
			}
			if err := json.Unmarshal(got["vinfer/cam1/table/count"], &zone); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got["vinfer/cam1/exit%2F2/count"], &line); err != nil {
				t.Fatal(err)
			}
			if zone.Stream != "cam1" || zone.Zone != "table" || zone.Objects != zoneIn || zone.Enter != 200 ||
				zone.Classes["person"]["objects"] != zoneIn || zone.Frame != 598 {
				t.Fatalf("zone count %s, want objects %d", got["vinfer/cam1/table/count"], zoneIn)
			}
			if line.Line != "exit/2" || line.In != lineIn || line.Out != lineOut || line.Frame != 598 {
				t.Fatalf("line count %s, want in %d out %d", got["vinfer/cam1/exit%2F2/count"], lineIn, lineOut)
			}
			t.Logf("%s: %s", proto, got["vinfer/cam1/table/count"])
		})
	}
}

// With counts: false, no count topics.
func TestCountsOff(t *testing.T) {
	t.Parallel()
	addr, r := testutil.FreeAddr(t), &received{}
	b := startBroker(t, addr, r, nil)
	defer b.Close()
	k := openSink(t, map[string]any{"url": "mqtt://" + addr, "counts": false})
	for i := range 10 {
		k.Write(bt.Result("cam1", int64(i), 1))
	}
	bt.Wait(t, bt.Timeout, func() bool { return r.events.Distinct() == 10 }, "10 events")
	k.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts != 0 {
		t.Fatalf("%d count messages", r.counts)
	}
}

// Mutual TLS: the broker requires a client certificate from the test CA.
func TestTLS(t *testing.T) {
	t.Parallel()
	certs := bt.NewCerts(t)
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			addr, r := testutil.FreeAddr(t), &received{}
			s := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			s.AddHook(new(auth.AllowHook), nil)
			if err := s.AddListener(listeners.NewTCP(listeners.Config{ID: "tls", Address: addr, TLSConfig: certs.Server})); err != nil {
				t.Fatal(err)
			}
			if err := s.Serve(); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			s.Subscribe("vinfer/#", 1, r.handle)
			k := openSink(t, map[string]any{"url": "mqtts://" + addr, "protocol": proto, "tls": certs.TLSSettings()})
			for i := range 10 {
				k.Write(bt.Result("cam1", int64(i), 1))
			}
			bt.Wait(t, bt.Timeout, func() bool { return r.events.Distinct() == 10 }, "10 events over TLS")
		})
	}
}

// TestLatency measures event-to-subscriber latency at QoS 1, 1000 events/s (VINFER_BENCH=1).
func TestLatency(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			l := &bt.Latency{}
			if os.Getenv("VINFER_BENCH") == "" {
				bt.RunLatency(t, "", nil, l, 0)
			}
			addr := testutil.FreeAddr(t)
			s := startBroker(t, addr, nil, nil) // no counting map: the heap figure is the sink's
			defer s.Close()
			s.Subscribe("vinfer/+/events", 2, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
				var e struct{ ID string }
				json.Unmarshal(pk.Payload, &e)
				l.Received(e.ID)
			})
			k := openSink(t, map[string]any{"url": "mqtt://" + addr, "protocol": proto})
			bt.RunLatency(t, "mqtt "+proto, k, l, 1000)
		})
	}
}

const childEnv = "VINFER_MQTT_CHILD"

// TestKillChild is TestKill's child (brokertest.RunChild).
func TestKillChild(t *testing.T) {
	addr, dir, mode, ok := bt.Child(childEnv)
	if !ok {
		t.Skip("child of TestKill")
	}
	k := openSink(t, map[string]any{"url": "mqtt://" + addr, "outbox": map[string]any{"dir": dir}, "drain_timeout": "60s"})
	bt.RunChild(t, k, mode)
}

// TestKill kills a process writing to an MQTT sink with SIGKILL mid-stream, twice, then starts
// it again on the same outbox: every event whose Write returned reaches the subscriber, at
// least once (duplicates counted).
func TestKill(t *testing.T) {
	t.Parallel()
	addr, r := testutil.FreeAddr(t), &received{}
	b := startBroker(t, addr, r, nil)
	defer b.Close()
	written := bt.Kill(t, "TestKillChild", childEnv, addr)
	bt.Wait(t, bt.Timeout, func() bool { return bt.Lost(written, &r.events) == 0 },
		"all %d written events at the subscriber", len(written))
	t.Logf("%d events written across 2 kills, all received (%d distinct, %d duplicates)", len(written), r.events.Distinct(), r.events.Dups())
}
