package brokered_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/sink/brokered"
)

// countMsg is a count record's body.
type countMsg struct {
	Stream, Zone, Line   string
	Objects              int64
	Enter, Leave, Loiter uint64
	In, Out              uint64
	Frame                int64
	Time                 time.Time
	Classes              map[string]map[string]int64
}

func ev(ty event.Type, frame int64, label, zone, line string, dir event.Direction) event.Event {
	return event.Event{ID: event.NewID(time.Now()), Type: ty, Stream: "cam1", Frame: frame, Time: time.Unix(1700000000+frame, 0),
		Label: label, Zone: zone, Line: line, Direction: dir}
}

// Count records follow the events that changed them: one per zone or line per Write, carrying
// per-class and total figures.
func TestCounts(t *testing.T) {
	p := &recorder{}
	k := open(t, brokered.Settings{Counts: true}, p)
	frames := [][]event.Event{
		{ev(event.ZoneEnter, 1, "person", "table", "", 0), ev(event.ZoneEnter, 1, "dog", "table", "", 0)},
		{ev(event.ZoneEnter, 2, "person", "table", "", 0), ev(event.LineCross, 2, "person", "", "exit", event.In)},
		{ev(event.TrackStart, 3, "person", "", "", 0)}, // no count changes: no record
		{ev(event.ZoneLoiter, 4, "person", "table", "", 0), ev(event.ZoneLeave, 4, "person", "table", "", 0),
			ev(event.LineCross, 4, "person", "", "exit", event.Out), ev(event.LineCross, 4, "car", "", "exit", event.Out)},
	}
	for i, evs := range frames {
		if err := k.Write(&sink.Result{Stream: "cam1", Frame: int64(i + 1), Events: evs}); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	var got []countMsg
	var kinds []brokered.Kind
	for _, r := range p.recs {
		kinds = append(kinds, r.Kind)
		if r.Kind != brokered.KindCount {
			continue
		}
		var m countMsg
		if err := json.Unmarshal(r.Body, &m); err != nil {
			t.Fatalf("%s: %v", r.Body, err)
		}
		if string(r.Stream) != "cam1" || string(r.Type) != m.Zone+m.Line {
			t.Fatalf("record stream %q type %q for %s", r.Stream, r.Type, r.Body)
		}
		got = append(got, m)
	}
	// e e c | e e c c | e | e e e e c c
	want := "eecee" + "cc" + "e" + "eeee" + "cc"
	if string(kinds) != want {
		t.Fatalf("record kinds %q, want %q", kinds, want)
	}
	last := got[len(got)-2:]
	zone, line := last[0], last[1]
	if zone.Zone != "table" || zone.Objects != 2 || zone.Enter != 3 || zone.Leave != 1 || zone.Loiter != 1 || zone.Frame != 4 ||
		zone.Classes["person"]["objects"] != 1 || zone.Classes["dog"]["objects"] != 1 || !zone.Time.Equal(time.Unix(1700000004, 0)) {
		t.Fatalf("zone counts %+v", zone)
	}
	if line.Line != "exit" || line.In != 1 || line.Out != 2 || line.Classes["car"]["out"] != 1 || line.Classes["person"]["in"] != 1 {
		t.Fatalf("line counts %+v", line)
	}
}

// Without Counts, no count records.
func TestNoCounts(t *testing.T) {
	p := &recorder{}
	k := open(t, brokered.Settings{}, p)
	k.Write(&sink.Result{Stream: "cam1", Events: []event.Event{ev(event.ZoneEnter, 1, "person", "table", "", 0)}})
	k.Close()
	if n := p.count(brokered.KindCount); n != 0 || p.count(brokered.KindEvent) != 1 {
		t.Fatalf("%d count records", n)
	}
}
