// Package deliver_test kills a whole `vinfer run` process with SIGKILL while it delivers events
// to an MQTT broker and checks, after a restart on the same outbox, that nothing it had written
// to its outbox is lost.
package deliver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/outbox"
	"github.com/vinfer/vinfer/sink/brokered"
)

const (
	clipFrames = 240 // four GOPs of car-detection.mp4: 46 events with the grid below
	stallAt    = 10  // the broker stops taking messages after this many distinct events
	pastStall  = 15  // run 1 is killed once it has written this many more events
	waitLong   = 3 * time.Minute
)

// key is what identifies an event of the deterministic file job across runs (ids differ).
type key struct {
	Stream string `json:"stream"`
	Frame  int64  `json:"frame"`
	Type   string `json:"type"`
	Track  int64  `json:"track_id"`
	Zone   string `json:"zone"`
	Line   string `json:"line"`
}

type eventMsg struct {
	ID string `json:"id"`
	key
}

// broker is an embedded MQTT broker counting, by id, the events its subscriber receives. It
// stalls the publishing connection that brings the stallAt-th distinct event: that event is
// acknowledged, every later message on that connection is refused unacknowledged (as a broker
// that hangs would), so a killed process's undelivered events can arrive only through its
// outbox after the restart, on a new connection.
type broker struct {
	mochi.HookBase
	addr     string
	mu       sync.Mutex
	accepted map[string]bool
	stalledC *mochi.Client
	stalled  chan struct{}
	got      map[string]int
	keys     map[string]key
}

func startBroker(t *testing.T) *broker {
	t.Helper()
	b := &broker{addr: testutil.FreeAddr(t), accepted: map[string]bool{}, stalled: make(chan struct{}),
		got: map[string]int{}, keys: map[string]key{}}
	s := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s.AddHook(new(auth.AllowHook), nil)
	if err := s.AddHook(b, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: b.addr})); err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	err := s.Subscribe("vinfer/+/events", 1, func(_ *mochi.Client, _ packets.Subscription, pk packets.Packet) {
		var e eventMsg
		if err := json.Unmarshal(pk.Payload, &e); err != nil || e.ID == "" {
			t.Errorf("event message %q: %v", pk.Payload, err)
			return
		}
		b.mu.Lock()
		b.got[e.ID]++
		b.keys[e.ID] = e.key
		b.mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// ID and Provides make the broker a mochi hook on OnPublish.
func (b *broker) ID() string { return "stall" }

func (b *broker) Provides(h byte) bool { return h == mochi.OnPublish }

// OnPublish refuses the stalled connection's messages and stalls the connection that brings
// the stallAt-th distinct event.
func (b *broker) OnPublish(cl *mochi.Client, pk packets.Packet) (packets.Packet, error) {
	if !strings.HasSuffix(pk.TopicName, "/events") {
		return pk, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if cl == b.stalledC {
		return pk, packets.ErrRejectPacket
	}
	var e eventMsg
	json.Unmarshal(pk.Payload, &e)
	b.accepted[e.ID] = true
	if len(b.accepted) == stallAt && b.stalledC == nil {
		b.stalledC = cl
		close(b.stalled)
	}
	return pk, nil
}

// has reports whether every id was received.
func (b *broker) has(ids map[string]key) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for id := range ids {
		if b.got[id] == 0 {
			return false
		}
	}
	return true
}

// TestKillRun runs `vinfer run` on a short clip with a grid of zones and lines (many scene
// events) and an MQTT sink. When the broker has taken some events it stops taking more from
// that connection; once the process has written more events past that point it is killed
// with SIGKILL, mid-stream (it cannot end by itself: its drain waits for the broker), its
// undelivered events in its outbox. The test reads the outbox as the process left it,
// restarts vinfer on the same outbox directory with the broker taking messages again (the file
// job runs again from its start: a clean run), and checks that every event of the first
// process's outbox arrives, by id, and that the union of what arrived covers the clean run's
// events by (stream, frame, type, track, zone or line).
func TestKillRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	model := testutil.Asset(t, "models/yolox_nano_416.onnx")
	clip := testutil.ShortClip(t, "videos/car-detection.mp4", clipFrames)
	bin := buildVinfer(t)
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data")
	b := startBroker(t)

	// Run 1: killed once it is well past the stall.
	events1 := filepath.Join(tmp, "events-1.jsonl")
	p1 := start(t, bin, writeConfig(t, tmp, "run-1", model, clip, events1, data, b.addr))
	testutil.Within(t, waitLong, fmt.Sprintf("the broker to receive %d events", stallAt), b.stalled)
	testutil.Eventually(t, waitLong, fmt.Sprintf("run 1 writing %d events", stallAt+pastStall), func() bool {
		return p1.exited() || len(readEvents(t, events1)) >= stallAt+pastStall
	})
	if p1.exited() {
		t.Fatalf("run 1 ended by itself before the kill:\n%s", p1.logTail())
	}
	if err := p1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testutil.Within(t, waitLong, "run 1 to die", p1.done)
	if ws, ok := p1.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("run 1: %v, not killed", p1.cmd.ProcessState)
	}
	written1 := readEvents(t, events1) // what run 1 produced (its events file), by id
	pending, lastFrame := readOutbox(t, filepath.Join(data, "outbox", "mqtt"))
	b.mu.Lock()
	onlyInOutbox := 0 // pending events the broker never took from run 1
	for id := range pending {
		if b.got[id] == 0 {
			onlyInOutbox++
		}
	}
	b.mu.Unlock()
	if onlyInOutbox == 0 {
		t.Fatalf("the kill left %d events in the outbox, all of them already at the broker: the test checked nothing", len(pending))
	}

	// Run 2 on the same outbox: it delivers run 1's leftovers and runs the whole job again.
	events2 := filepath.Join(tmp, "events-2.jsonl")
	p2 := start(t, bin, writeConfig(t, tmp, "run-2", model, clip, events2, data, b.addr))
	testutil.Within(t, waitLong, "run 2 to end", p2.done)
	if !p2.cmd.ProcessState.Success() {
		t.Fatalf("run 2: %v\n%s", p2.cmd.ProcessState, p2.logTail())
	}
	clean := readEvents(t, events2)

	// Every event of run 1's outbox arrives, and so does every event run 1 had written before
	// the last frame its outbox holds (acknowledged ones arrived before the kill); the clean
	// run's events all arrive.
	testutil.Eventually(t, time.Minute, "every event left in run 1's outbox at the broker", func() bool { return b.has(pending) })
	before := map[string]key{}
	for id, k := range written1 {
		if k.Frame < lastFrame {
			before[id] = k
		}
	}
	if !b.has(before) {
		t.Fatalf("events run 1 wrote before frame %d missing at the broker", lastFrame)
	}
	testutil.Eventually(t, time.Minute, "run 2's events at the broker", func() bool { return b.has(clean) })

	// The union of both runs covers the clean run's events, and run 1's events are among them
	// (the job is deterministic).
	want := map[key]bool{}
	for _, k := range clean {
		want[k] = true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	got := map[key]bool{}
	dups := 0
	for id, n := range b.got {
		k := b.keys[id]
		if !want[k] {
			t.Errorf("event %s %+v arrived but is not one of the clean run's", id, k)
		}
		got[k] = true
		dups += n - 1
	}
	for k := range want {
		if !got[k] {
			t.Errorf("clean run's event %+v never arrived", k)
		}
	}
	fromRun1 := 0
	for id := range b.got {
		if _, ok := clean[id]; !ok {
			fromRun1++
		}
	}
	t.Logf("run 1 wrote %d events; at the kill %d were after its outbox cursor (frames up to %d), %d of them "+
		"never taken by the broker; clean run %d events; %d distinct ids at the broker (%d of run 1), %d duplicates",
		len(written1), len(pending), lastFrame, onlyInOutbox, len(clean), len(b.got), fromRun1, dups)
}

// readOutbox reads the event records after the mqtt sink's cursor in dir without moving it:
// the events a killed process had written and the broker had not acknowledged (or whose
// acknowledgement the cursor did not hold yet). It returns them by id and the highest frame
// among every record there.
func readOutbox(t *testing.T, dir string) (map[string]key, int64) {
	t.Helper()
	o := &outbox.Outbox{Dir: dir, Logger: slog.New(slog.DiscardHandler)}
	if err := o.Init(); err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	c, err := o.Consumer("mqtt")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // nothing acknowledged: the cursor file stays as it was
	events, last := map[string]key{}, int64(-1)
	left := c.Stats().Records
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for left > 0 {
		recs, err := c.Read(ctx, 256, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		left -= uint64(len(recs))
		for _, r := range recs {
			rec, err := brokered.Decode(r.Data)
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Frame  *int64 `json:"frame"`
				Source string `json:"source"`
			}
			if json.Unmarshal(rec.Body, &body) == nil && body.Frame != nil {
				last = max(last, *body.Frame)
			}
			if rec.Kind != brokered.KindEvent {
				continue
			}
			var e eventMsg
			if err := json.Unmarshal(rec.Body, &e); err != nil {
				t.Fatal(err)
			}
			if e.ID != rec.ID.String() {
				t.Fatalf("record key %s, body id %s", rec.ID, e.ID)
			}
			events[e.ID] = e.key
		}
	}
	return events, last
}

// readEvents reads an events file (one JSON event a line; a last line cut by a kill is
// skipped) by id.
func readEvents(t *testing.T, path string) map[string]key {
	t.Helper()
	out := map[string]key{}
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return out
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e eventMsg
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.ID != "" {
			out[e.ID] = e.key
		}
	}
	return out
}

// writeConfig writes a configuration for one run: the clip with a grid of 32 zones (500 ms
// loiter) and 26 lines, so that its few objects give many events; an events file; the mqtt
// sink's outbox under data (shared by the runs), a drain long enough that a run never stops
// on its own with records undelivered.
func writeConfig(t *testing.T, dir, name, model, clip, events, data, addr string) string {
	t.Helper()
	var c strings.Builder
	fmt.Fprintf(&c, "models:\n  - {name: yolox, path: %q, intra_op_threads: 1}\n", model)
	fmt.Fprintf(&c, "streams:\n  - id: road\n    source: %q\n    model: yolox\n    zones:\n", clip)
	for i := range 8 {
		for j := range 4 {
			x, y := i*96, j*108
			fmt.Fprintf(&c, "      - {name: z%d%d, polygon: [[%d, %d], [%d, %d], [%d, %d], [%d, %d]], loiter: 500ms}\n",
				i, j, x, y, x+96, y, x+96, y+108, x, y+108)
		}
	}
	c.WriteString("    lines:\n")
	for x := 48; x < 768; x += 48 {
		fmt.Fprintf(&c, "      - {name: v%d, points: [[%d, 0], [%d, 432]]}\n", x, x, x)
	}
	for y := 36; y < 432; y += 36 {
		fmt.Fprintf(&c, "      - {name: h%d, points: [[0, %d], [768, %d]]}\n", y, y, y)
	}
	fmt.Fprintf(&c, "output:\n  jsonl: none\n  events: %q\n  data_dir: %q\n  sinks:\n", events, data)
	fmt.Fprintf(&c, "    - {type: mqtt, url: \"mqtt://%s\", min_backoff: 20ms, max_backoff: 500ms, drain_timeout: 10m}\n", addr)
	path := filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(path, []byte(c.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
