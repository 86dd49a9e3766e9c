package mqtt_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/deliver"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/testutil"
	bt "github.com/vinfer/vinfer/internal/testutil/brokertest"
	"github.com/vinfer/vinfer/internal/testutil/hasstest"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/mqtt"
)

var sinkSeq atomic.Int64

// hassSink is what Open returns with discovery.
type hassSink interface {
	sink.Sink
	sink.SceneWatcher
	Close() error
	Stats() deliver.Stats
}

// openHass opens an mqtt sink with Home Assistant discovery; it is closed at the test's end
// unless the test closes it.
func openHass(t *testing.T, settings map[string]any) hassSink {
	t.Helper()
	base := map[string]any{"name": fmt.Sprintf("ha-%d", sinkSeq.Add(1)), "discovery": "homeassistant",
		"min_backoff": "20ms", "max_backoff": "500ms", "timeout": "5s"}
	maps.Copy(base, settings)
	s, err := mqtt.Open(config.NewSink("mqtt", base), sink.Env{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	k, ok := s.(hassSink)
	if !ok {
		t.Fatalf("%T is not a sink.SceneWatcher", s)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

// ev is a zone or line event of stream cam1.
func ev(ty event.Type, frame int64, track int64, label, zone, line string, dir event.Direction) event.Event {
	return event.Event{ID: event.NewID(time.Now()), Type: ty, Stream: "cam1", Frame: frame, Time: time.Now(),
		TrackID: track, Label: label, Zone: zone, Line: line, Direction: dir}
}

// Discovery as Home Assistant sees it: a client subscribed to homeassistant/# and vinfer/#
// reads the entities (every config valid against the documented schema, unique ids unique,
// one device per stream), renders their states with Jinja from the retained count topics
// after a run of events, sees the entities of a zone and a line dropped from the scene
// cleared (empty retained payload), then every entity and the availability topic cleared when
// the stream is removed; closing the sink makes the availability offline.
func TestHassDiscovery(t *testing.T) {
	t.Parallel()
	for _, proto := range protocols {
		t.Run(proto, func(t *testing.T) {
			addr := testutil.FreeAddr(t)
			b := startBroker(t, addr, nil, nil)
			defer b.Close()
			ha := hasstest.Watch(t, addr, "homeassistant/#", "vinfer/#")
			k := openHass(t, map[string]any{"url": "mqtt://" + addr, "protocol": proto})
			k.Scene("cam1", sink.Scene{
				Zones: []sink.Place{{Name: "door"}, {Name: "yard", Classes: []string{"person", "car"}}},
				Lines: []sink.Place{{Name: "gate"}},
			})
			r := &sink.Result{Stream: "cam1", Frame: 1, Events: []event.Event{
				ev(event.ZoneEnter, 1, 1, "person", "door", "", 0),
				ev(event.ZoneEnter, 1, 2, "car", "door", "", 0),
				ev(event.ZoneEnter, 1, 3, `fork'lift \o/`, "door", "", 0),
				ev(event.ZoneEnter, 1, 4, "person", "yard", "", 0),
				ev(event.LineCross, 1, 1, "person", "", "gate", event.In),
			}}
			if err := k.Write(r); err != nil {
				t.Fatal(err)
			}
			r = &sink.Result{Stream: "cam1", Frame: 2, Events: []event.Event{
				ev(event.ZoneLeave, 2, 1, "person", "door", "", 0),
				ev(event.ZoneLoiter, 2, 2, "car", "door", "", 0),
			}}
			if err := k.Write(r); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{
				"cam1/last event": "zone.loiter", "cam1/door occupancy": "ON", "cam1/door objects": "2",
				"cam1/door person": "0", "cam1/door car": "1", `cam1/door fork'lift \o/`: "1",
				"cam1/yard occupancy": "ON", "cam1/yard objects": "1", "cam1/yard person": "1", "cam1/yard car": "0",
				"cam1/gate in": "1", "cam1/gate out": "0",
			}
			var ents map[string]hasstest.Entity
			bt.Wait(t, bt.Timeout, func() bool {
				ents = hasstest.Entities(t, ha.Last(), "homeassistant")
				return len(ents) == len(want) && string(ha.Last()["vinfer/cam1/door/count"]) != "" &&
					strings.Contains(string(ha.Last()["vinfer/cam1/door/count"]), `"leave":1`) &&
					string(ha.Last()["vinfer/cam1/availability"]) == "online"
			}, "the entities %v", slices.Sorted(maps.Keys(ents)))
			device := ""
			for name, e := range ents {
				if e.Config.AvailabilityMode != "all" || len(e.Config.Availability) != 2 ||
					e.Config.Availability[0].Topic != "vinfer/available" || e.Config.Availability[1].Topic != "vinfer/cam1/availability" {
					t.Fatalf("%s: availability %s", name, e.Raw)
				}
				if device == "" {
					device = e.Config.Device.Identifiers[0]
				}
				if e.Config.Device.Identifiers[0] != device || e.Config.Device.Name != "cam1" {
					t.Fatalf("%s: device %s, want one device per stream", name, e.Raw)
				}
			}
			if c := ents["cam1/door occupancy"]; c.Component != "binary_sensor" || c.Config.DeviceClass != "occupancy" {
				t.Fatalf("occupancy: %s %s", c.Component, c.Raw)
			}
			if c := ents["cam1/gate in"]; c.Config.StateClass != "total_increasing" {
				t.Fatalf("gate in: %s", c.Raw)
			}
			bt.Wait(t, bt.Timeout, func() bool {
				got, ok := hasstest.States(t, ents, ha.Last())
				if !ok {
					t.Skip("no jinja2 to render the states with")
				}
				for name, w := range want {
					if got[name] != w {
						t.Logf("%s: %q, want %q", name, got[name], w)
						return false
					}
				}
				return true
			}, "the states")

			// The yard and the gate leave the scene: their entities are cleared.
			k.Scene("cam1", sink.Scene{Zones: []sink.Place{{Name: "door"}}})
			bt.Wait(t, bt.Timeout, func() bool {
				ents = hasstest.Entities(t, ha.Last(), "homeassistant")
				_, yard := ents["cam1/yard occupancy"]
				_, gate := ents["cam1/gate in"]
				_, door := ents["cam1/door car"]
				return !yard && !gate && door && len(ents) == 6
			}, "yard and gate cleared (have %v)", slices.Sorted(maps.Keys(ents)))

			// The stream goes: everything is cleared.
			k.Removed("cam1")
			bt.Wait(t, bt.Timeout, func() bool {
				last := ha.Last()
				for topic, p := range last {
					if strings.HasPrefix(topic, "homeassistant/") && len(p) > 0 {
						return false
					}
				}
				_, seen := last["vinfer/cam1/availability"]
				return seen && len(last["vinfer/cam1/availability"]) == 0
			}, "every config and the availability cleared")

			// A new stream, then the sink closes: offline.
			k.Scene("cam2", sink.Scene{Zones: []sink.Place{{Name: "hall"}}})
			bt.Wait(t, bt.Timeout, func() bool { return string(ha.Last()["vinfer/cam2/availability"]) == "online" }, "cam2 online")
			if err := k.Close(); err != nil {
				t.Fatal(err)
			}
			bt.Wait(t, bt.Timeout, func() bool {
				last := ha.Last()
				return string(last["vinfer/cam2/availability"]) == "offline" && string(last["vinfer/available"]) == "offline"
			}, "offline")
		})
	}
}

// A late subscriber (Home Assistant started after vinfer) gets every config and state from
// the broker's retained messages.
func TestHassRetained(t *testing.T) {
	t.Parallel()
	addr := testutil.FreeAddr(t)
	b := startBroker(t, addr, nil, nil)
	defer b.Close()
	k := openHass(t, map[string]any{"url": "mqtt://" + addr, "discovery_prefix": "ha/disc"})
	k.Scene("cam1", sink.Scene{Zones: []sink.Place{{Name: "door/1", Classes: []string{"person"}}}, Lines: []sink.Place{{Name: "gate"}}})
	k.Write(&sink.Result{Stream: "cam1", Events: []event.Event{ev(event.ZoneEnter, 1, 1, "person", "door/1", "", 0)}})
	bt.Wait(t, bt.Timeout, func() bool { st := k.Stats(); return st.Up && st.Depth == 0 }, "everything delivered")
	ha := hasstest.Watch(t, addr, "ha/disc/#", "vinfer/#")
	var ents map[string]hasstest.Entity
	bt.Wait(t, bt.Timeout, func() bool {
		last := ha.Last()
		ents = hasstest.Entities(t, last, "ha/disc")
		if len(ents) != 6 {
			return false
		}
		got, ok := hasstest.States(t, ents, last)
		return !ok || (got["cam1/door/1 person"] == "1" && got["cam1/gate in"] == "0" && got["cam1/door/1 occupancy"] == "ON")
	}, "retained entities and states (have %v)", slices.Sorted(maps.Keys(ents)))
}

func TestHassConfigErrors(t *testing.T) {
	t.Parallel()
	for _, m := range []map[string]any{
		{"discovery": "openhab"}, {"discovery": "homeassistant", "counts": false},
		{"discovery": "homeassistant", "discovery_prefix": "ha/#"}, {"discovery": "homeassistant", "discovery_prefix": "$SYS"},
	} {
		m["url"] = "mqtt://127.0.0.1:1"
		if _, err := mqtt.Open(config.NewSink("mqtt", m), sink.Env{Dir: t.TempDir()}); err == nil {
			t.Fatalf("%v accepted", m)
		}
	}
}

// Scene changes and removals come from the API's goroutines while the pipeline writes: the
// sink stays consistent (run with -race) and ends with the last scene's entities.
func TestHassConcurrentScene(t *testing.T) {
	t.Parallel()
	addr := testutil.FreeAddr(t)
	b := startBroker(t, addr, nil, nil)
	defer b.Close()
	ha := hasstest.Watch(t, addr, "homeassistant/#")
	k := openHass(t, map[string]any{"url": "mqtt://" + addr})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			k.Write(&sink.Result{Stream: "cam1", Frame: int64(i), Events: []event.Event{
				ev(event.ZoneEnter, int64(i), int64(i), fmt.Sprintf("class%d", i%5), "door", "", 0)}})
		}
	}()
	for i := range 100 {
		k.Scene("cam1", sink.Scene{Zones: []sink.Place{{Name: "door"}, {Name: fmt.Sprintf("z%d", i%3)}}})
		if i%10 == 9 {
			k.Removed("cam2")
		}
	}
	<-done
	k.Scene("cam1", sink.Scene{Zones: []sink.Place{{Name: "door"}}})
	// door: occupancy, objects and one sensor per class seen; the last event.
	bt.Wait(t, bt.Timeout, func() bool { return len(hasstest.Entities(t, ha.Last(), "homeassistant")) == 3+5 },
		"door's entities only (have %v)", slices.Sorted(maps.Keys(hasstest.Entities(t, ha.Last(), "homeassistant"))))
}
