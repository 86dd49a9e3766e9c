package e2e_test

import (
	"bufio"
	"encoding/json"
	"github.com/vinfer/vinfer/internal/apptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
)

// TestSceneEvents: a file stream with a zone and a line gives tracked detections and scene
// events, the same ones in the events JSON Lines output and to a live subscriber (what SSE and
// WebSocket send), each id once, every person leaving through the exit line crossing it once.
func TestSceneEvents(t *testing.T) {
	out := filepath.Join(t.TempDir(), "events.jsonl")
	scene := analytics.Config{
		Zones: []analytics.Zone{{Name: "table", Polygon: []analytics.Point{{380, 350}, {570, 350}, {570, 432}, {380, 432}},
			Classes: []string{"person"}, Inertia: 3, Loiter: analytics.Duration(5 * time.Second)}},
		Lines: []analytics.Line{{Name: "exit", Points: []analytics.Point{{620, 300}, {620, 432}}, Classes: []string{"person"}}},
	}
	cfg := &config.Config{
		Models: []config.Model{{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx")}},
		Output: config.Output{Sinks: []config.Sink{app.NewEventsSink(out)}},
	}
	a := apptest.MustApp(t, cfg, app.Options{})
	live, cancel := a.Subscribe(defs.Subscription{Events: true})
	defer cancel()
	var mu sync.Mutex
	var fromLive []event.Event
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			var msg []byte
			select {
			case msg = <-live:
			case <-stopped: // every result went through the sinks: take what is left
				select {
				case msg = <-live:
				default:
					return
				}
			}
			var e event.Event
			if err := json.Unmarshal(msg, &e); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			fromLive = append(fromLive, e)
			mu.Unlock()
		}
	}()
	s := config.Stream{ID: "office", Source: filepath.Join(assets(t), "videos", "one-by-one-person-detection.mp4"), Model: "m",
		Interval: 2, Config: scene}
	if err := a.AddStream(s); err != nil {
		t.Fatal(err)
	}
	a.Pipeline.Wait()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	close(stopped)

	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []event.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		events = append(events, e)
	}
	seen := map[string]bool{}
	crossings := map[int64]int{}
	inside := map[int64]int{}
	for _, e := range events {
		if seen[e.ID.String()] {
			t.Fatalf("event %s twice", e.ID)
		}
		seen[e.ID.String()] = true
		if e.Stream != "office" || e.TrackID <= 0 || e.Label != "person" {
			t.Fatalf("event %+v", e)
		}
		switch e.Type {
		case event.LineCross:
			crossings[e.TrackID]++
		case event.ZoneEnter:
			inside[e.TrackID]++
		case event.ZoneLeave:
			inside[e.TrackID]--
		}
		if inside[e.TrackID] < 0 || inside[e.TrackID] > 1 {
			t.Fatalf("track %d: unbalanced zone events at %+v", e.TrackID, e)
		}
	}
	for id, n := range inside {
		if n != 0 {
			t.Errorf("track %d still inside the zone after the stream ended", id)
		}
	}
	if len(crossings) < 4 {
		t.Fatalf("%d tracks crossed the exit line, want the people of the clip (6): %v", len(crossings), crossings)
	}
	for id, n := range crossings {
		if n != 1 {
			t.Errorf("track %d crossed %d times", id, n)
		}
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(fromLive) != len(events) {
		t.Fatalf("live subscriber got %d events, the JSON Lines output %d", len(fromLive), len(events))
	}
	for i := range events {
		if fromLive[i].ID != events[i].ID {
			t.Fatalf("event %d: live %s, file %s", i, fromLive[i].ID, events[i].ID)
		}
	}
	t.Logf("%d events, %d exits", len(events), len(crossings))
}
