package e2e_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"image/jpeg"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/testutil"
)

// collected are event payloads received by one sink's peer, in arrival order.
type collected struct {
	mu   sync.Mutex
	msgs [][]byte
}

func (c *collected) add(b []byte) {
	c.mu.Lock()
	c.msgs = append(c.msgs, append([]byte(nil), b...))
	c.mu.Unlock()
}

// byID returns the payloads by event id.
func (c *collected) byID() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]string{}
	for _, m := range c.msgs {
		var e struct{ ID string }
		if json.Unmarshal(m, &e) == nil {
			out[e.ID] = string(m)
		}
	}
	return out
}

// sinkPeers are an embedded MQTT broker and a webhook endpoint on loopback.
type sinkPeers struct {
	mqttAddr, hookURL string
	mqtt, hook        collected
}

func startSinkPeers(t *testing.T) *sinkPeers {
	t.Helper()
	p := &sinkPeers{mqttAddr: testutil.FreeAddr(t)}
	b := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	b.AddHook(new(auth.AllowHook), nil)
	if err := b.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: p.mqttAddr})); err != nil {
		t.Fatal(err)
	}
	if err := b.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	if err := b.Subscribe("vinfer/office/events", 1, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		p.mqtt.add(pk.Payload)
	}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		p.hook.add(body)
	}))
	t.Cleanup(hs.Close)
	p.hookURL = hs.URL + "/hook"
	return p
}

func (p *sinkPeers) decls() []config.Sink {
	return []config.Sink{
		config.NewSink("mqtt", map[string]any{"url": "mqtt://" + p.mqttAddr, "min_backoff": "20ms", "max_backoff": "500ms"}),
		config.NewSink("webhook", map[string]any{"url": p.hookURL, "min_backoff": "20ms", "max_backoff": "500ms"}),
	}
}

// readSSE collects the data of an SSE stream's events until the test ends.
func readSSE(t *testing.T, url string) *collected {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("SSE %s: %s", url, resp.Status)
	}
	t.Cleanup(func() { resp.Body.Close() })
	c := &collected{}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				c.add([]byte(d))
			}
		}
	}()
	return c
}

// eventSchema compiles docs/events.schema.json.
func eventSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(testutil.Root(t) + "/docs/events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("events.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("events.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// payload is an event's evidence keys as the sinks send them.
type payload struct {
	ID          string `json:"id"`
	Type        string `json:"type"`
	HasClip     *bool  `json:"has_clip"`
	HasSnapshot *bool  `json:"has_snapshot"`
	ClipURL     string `json:"clip_url"`
	SnapshotURL string `json:"snapshot_url"`
}

// checkSinks reads the events file: every event passes the schema; the recorded crossings
// (want of them) carry has_clip, has_snapshot and URLs that answer with the clip (video/mp4)
// and the best-frame JPEG; the zone events has_clip false and no URLs. MQTT, the webhook and
// SSE receive byte-identical payloads.
func checkSinks(t *testing.T, eventsFile string, peers *sinkPeers, sse *collected, want int) {
	t.Helper()
	schema := eventSchema(t)
	raw, err := os.ReadFile(eventsFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	crossings, zones := 0, 0
	file := map[string]string{}
	for _, l := range lines {
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(l))
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(v); err != nil {
			t.Fatalf("events file: %s: %v", l, err)
		}
		var p payload
		json.Unmarshal(l, &p)
		file[p.ID] = string(l)
		if p.HasClip == nil || p.HasSnapshot == nil {
			t.Fatalf("event without has_clip/has_snapshot: %s", l)
		}
		if p.Type != "line.cross" {
			zones++
			if *p.HasClip || *p.HasSnapshot || p.ClipURL != "" || p.SnapshotURL != "" {
				t.Fatalf("an event evidence leaves out says it has a clip: %s", l)
			}
			continue
		}
		crossings++
		if !*p.HasClip || !*p.HasSnapshot {
			t.Fatalf("a recorded crossing without has_clip/has_snapshot: %s", l)
		}
		fetch(t, p.ClipURL, "video/mp4")
		fetch(t, p.SnapshotURL, "image/jpeg")
	}
	if crossings != want || zones == 0 {
		t.Fatalf("events file: %d crossings (want %d, as recorded), %d zone events (want some)", crossings, want, zones)
	}
	for name, c := range map[string]*collected{"mqtt": &peers.mqtt, "webhook": &peers.hook, "sse": sse} {
		testutil.Eventually(t, 60*time.Second, name+" received every event", func() bool { return len(c.byID()) >= len(file) })
		for id, got := range c.byID() {
			if file[id] != got {
				t.Fatalf("%s sent\n%s\nthe events file has\n%s", name, got, file[id])
			}
		}
	}
	t.Logf("%d events (%d crossings with clips) identical on the events file, MQTT, the webhook and SSE", len(file), crossings)
}

// fetch GETs an absolute URL from an event and checks its type; a JPEG must decode.
func fetch(t *testing.T, url, ctype string) {
	t.Helper()
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("URL %q is not absolute on the API (evidence.public_url)", url)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctype || len(b) < 1000 {
		t.Fatalf("GET %s: %s, %s, %d bytes", url, resp.Status, resp.Header.Get("Content-Type"), len(b))
	}
	if ctype == "image/jpeg" {
		if _, err := jpeg.Decode(bytes.NewReader(b)); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
}

// checkBest: an event's snapshot is its track's best frame: at least as good (score × box
// area, uncut first) as the event's own frame, inside the clip.
func checkBest(t *testing.T, it defs.EvidenceItem) {
	t.Helper()
	var ev struct {
		Score float32
		Box   [4]float32
	}
	json.Unmarshal(it.Event, &ev)
	b := it.Best
	if b == nil || b.PTS < it.Clip.Start || b.PTS > it.Clip.End+0.001 {
		t.Fatalf("event %s at %.1f s: best frame %+v, want one in the clip %.1f–%.1f s", it.ID, it.PTS, b, it.Clip.Start, it.Clip.End)
	}
	area := func(x [4]float32) float32 { return (x[2] - x[0]) * (x[3] - x[1]) }
	own, best := ev.Score*area(ev.Box), b.Score*area(b.Box)
	ownCut := ev.Box[0] <= 2 || ev.Box[1] <= 2 || ev.Box[2] >= 766 || ev.Box[3] >= 430
	if (!ownCut && b.Cut) || (ownCut == b.Cut && best < own) {
		t.Fatalf("event %s: best frame %+v (score×area %.0f) is worse than the event's own (%.0f, cut %v)", it.ID, b, best, own, ownCut)
	}
	t.Logf("event %s at %.1f s: best frame at %.1f s, score×area %.0f, cut %v (event's own: %.0f, cut %v)", it.ID, it.PTS, b.PTS, best, b.Cut, own, ownCut)
}
