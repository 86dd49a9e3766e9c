// Package hass_test runs the sample clip through a whole app with an MQTT sink doing Home
// Assistant discovery, an embedded broker and a client standing in for Home Assistant.
package hass_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/hasstest"
)

const (
	wait   = 2 * time.Minute
	frames = 200 // of one-by-one-person-detection.mp4: a person sits at the table, leaves through the exit
)

func startBroker(t *testing.T) string {
	t.Helper()
	addr := testutil.FreeAddr(t)
	b := mochi.New(&mochi.Options{InlineClient: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	b.AddHook(new(auth.AllowHook), nil)
	if err := b.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: addr})); err != nil {
		t.Fatal(err)
	}
	if err := b.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return addr
}

// expected computes what Home Assistant should show from the run's events file: per zone
// the objects inside (enter − leave, floored at 0 as the counts are) in all and per class,
// per line the in and out crossings, and the last event's type.
func expected(t *testing.T, path string, zoneClasses map[string][]string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	objects := map[string]map[string]int{} // zone → class → inside
	lines := map[string]map[string]int{}   // line → in/out → crossings
	last := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e struct{ Type, Zone, Line, Label, Direction string }
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatal(err)
		}
		last = e.Type
		switch e.Type {
		case "zone.enter", "zone.leave":
			if objects[e.Zone] == nil {
				objects[e.Zone] = map[string]int{}
			}
			if e.Type == "zone.enter" {
				objects[e.Zone][e.Label]++
			} else {
				objects[e.Zone][e.Label] = max(objects[e.Zone][e.Label]-1, 0)
			}
		case "line.cross":
			if lines[e.Line] == nil {
				lines[e.Line] = map[string]int{}
			}
			lines[e.Line][e.Direction]++
		}
	}
	want := map[string]string{"office/last event": last}
	for zone, declared := range zoneClasses {
		sum := 0
		classes := declared
		if len(classes) == 0 {
			classes = slices.Collect(maps.Keys(objects[zone]))
		}
		for _, k := range classes {
			want["office/"+zone+" "+k] = fmt.Sprint(objects[zone][k])
		}
		for _, n := range objects[zone] {
			sum += n
		}
		want["office/"+zone+" objects"] = fmt.Sprint(sum)
		want["office/"+zone+" occupancy"] = map[bool]string{true: "ON", false: "OFF"}[sum > 0]
	}
	for _, l := range []string{"exit"} {
		want["office/"+l+" in"] = fmt.Sprint(lines[l]["in"])
		want["office/"+l+" out"] = fmt.Sprint(lines[l]["out"])
	}
	return want
}

// TestSampleClip runs the sample clip (one-by-one-person-detection.mp4, its first frames)
// with two zones, one counting persons only, one every class, and a line, through an app whose MQTT sink
// does Home Assistant discovery. A client subscribed as Home Assistant is finds one device
// with the zones' occupancy and class sensors and the line's counters, every config valid
// against the documented schema, and, once the clip ended, states rendered from the value
// templates (Jinja) equal to what the events file gives. Removing the stream clears every
// config.
func TestSampleClip(t *testing.T) {
	addr := startBroker(t)
	ha := hasstest.Watch(t, addr, "homeassistant/#", "vinfer/#")
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	cfg := &config.Config{Dir: dir,
		Models: []config.Model{{Name: "m", Path: testutil.Asset(t, "models/yolox_nano_416.onnx")}},
		Output: config.Output{Events: events, Sinks: []config.Sink{config.NewSink("mqtt", map[string]any{
			"url": "mqtt://" + addr, "discovery": "homeassistant", "min_backoff": "20ms", "max_backoff": "500ms"})}},
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			a.Stop()
		}
	}()
	zones := map[string][]string{"table": {"person"}, "room": nil}
	s := config.Stream{ID: "office", Source: testutil.ShortClip(t, "videos/one-by-one-person-detection.mp4", frames), Model: "m", Interval: 2,
		Config: analytics.Config{
			Zones: []analytics.Zone{
				{Name: "table", Polygon: []analytics.Point{{380, 350}, {570, 350}, {570, 432}, {380, 432}}, Classes: zones["table"]},
				{Name: "room", Polygon: []analytics.Point{{0, 0}, {1, 0}, {1, 1}, {0, 1}}, Normalized: true},
			},
			Lines: []analytics.Line{{Name: "exit", Points: []analytics.Point{{620, 300}, {620, 432}}, Classes: []string{"person"}}},
		}}
	if err := a.AddStream(s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := a.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	var ents map[string]hasstest.Entity
	var got map[string]string
	want := map[string]string{}
	testutil.Eventually(t, wait, "Home Assistant's states to match the events file", func() bool {
		want = expected(t, events, zones)
		ents = hasstest.Entities(t, ha.Last(), "homeassistant")
		for name := range want {
			if _, ok := ents[name]; !ok {
				return false
			}
		}
		var ok bool
		if got, ok = hasstest.States(t, ents, ha.Last()); !ok {
			t.Skip("no jinja2 to render the states with")
		}
		for name, w := range want {
			if got[name] != w {
				return false
			}
		}
		return true
	})
	if len(ents) != len(want) {
		t.Fatalf("entities %v, want %v", slices.Sorted(maps.Keys(ents)), slices.Sorted(maps.Keys(want)))
	}
	if want["office/last event"] == "" || want["office/exit in"]+want["office/exit out"] == "00" {
		t.Fatalf("the clip gave no line crossings: %v", want)
	}
	t.Logf("states %v", got)
	// The table's occupancy followed the run: rendered from each count the sink sent, it went
	// ON and back OFF as the events file has the person enter and leave, in that order.
	table := ents["office/table occupancy"]
	seen, _ := hasstest.Render(t, table.Config.ValueTemplate, ha.History(table.Config.StateTopic))
	if i := slices.Index(seen, "ON"); i < 0 || !slices.Contains(seen[i:], "OFF") || seen[0] != "OFF" {
		t.Fatalf("table occupancy over the run %v, want OFF, ON, …, OFF", seen)
	}
	if err := a.RemoveStream("office"); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, "every config cleared", func() bool {
		for topic, p := range ha.Last() {
			if strings.HasPrefix(topic, "homeassistant/") && len(p) > 0 {
				return false
			}
		}
		return true
	})
	stopped = true
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, wait, "offline", func() bool { return string(ha.Last()["vinfer/available"]) == "offline" })
}
