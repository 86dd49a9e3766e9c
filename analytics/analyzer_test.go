package analytics

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
)

// checkBalance checks the gauges against the events: per zone and class, occupancy = enters −
// leaves ≥ 0 and the counters equal the events; after a Flush, every zone is empty.
func checkBalance(t *testing.T, a *Analyzer, events []string, flushed bool) {
	t.Helper()
	var m Metrics
	a.Metrics(&m)
	count := func(kind, name string) uint64 {
		var n uint64
		for _, e := range events {
			if strings.Contains(e, " "+kind+" "+name+" ") {
				n++
			}
		}
		return n
	}
	byZone := map[string][4]int64{}
	for _, z := range m.Zones {
		if z.Objects < 0 || z.Objects != int64(z.Enter)-int64(z.Leave) {
			t.Fatalf("zone %s class %s: objects %d, enter %d, leave %d", z.Zone, z.Class, z.Objects, z.Enter, z.Leave)
		}
		if flushed && z.Objects != 0 {
			t.Fatalf("zone %s class %s: %d objects after Flush", z.Zone, z.Class, z.Objects)
		}
		v := byZone[z.Zone]
		byZone[z.Zone] = [4]int64{v[0] + int64(z.Enter), v[1] + int64(z.Leave), v[2] + int64(z.Loiter), v[3] + z.Objects}
	}
	for name, v := range byZone {
		if uint64(v[0]) != count("zone.enter", name) || uint64(v[1]) != count("zone.leave", name) || uint64(v[2]) != count("zone.loiter", name) {
			t.Fatalf("zone %s counters %v, events %q", name, v, events)
		}
		if occ, ok := a.Occupancy(name, ""); !ok || occ != v[3] {
			t.Fatalf("zone %s occupancy %d %v, want %d", name, occ, ok, v[3])
		}
	}
	for _, l := range m.Lines {
		if l.In+l.Out != count("line.cross", l.Line) {
			// several classes share a line: sum them
			var sum uint64
			for _, o := range m.Lines {
				if o.Line == l.Line {
					sum += o.In + o.Out
				}
			}
			if sum != count("line.cross", l.Line) {
				t.Fatalf("line %s counters %d, events %q", l.Line, sum, events)
			}
		}
	}
}

func TestMetricsRows(t *testing.T) {
	c := Config{Zones: []Zone{table}, Lines: []Line{door}}
	steps := merge(ysC(1, "person", 300, 150, 300, 300), ysC(2, "car", 350, 150, 300, 300), ysC(3, "car", 250, 300, 150))
	_, a := run(t, c, steps, false)
	var m Metrics
	a.Metrics(&m)
	wantZones := []ZoneCount{
		{Zone: "table", Class: "car", Objects: 1, Enter: 2, Leave: 1},
		{Zone: "table", Class: "person", Objects: 1, Enter: 1},
	}
	wantLines := []LineCount{
		{Line: "door", Class: "person", In: 1},
		{Line: "door", Class: "car", In: 1, Out: 1},
	}
	if len(m.Zones) != len(wantZones) || len(m.Lines) != len(wantLines) {
		t.Fatalf("%+v", m)
	}
	for i := range wantZones {
		if m.Zones[i] != wantZones[i] {
			t.Errorf("zone row %d: %+v, want %+v", i, m.Zones[i], wantZones[i])
		}
	}
	for i := range wantLines {
		if m.Lines[i] != wantLines[i] {
			t.Errorf("line row %d: %+v, want %+v", i, m.Lines[i], wantLines[i])
		}
	}
	if n, _ := a.Occupancy("table", "car"); n != 1 {
		t.Errorf("car occupancy %d", n)
	}
	if _, ok := a.Occupancy("nope", ""); ok {
		t.Error("unknown zone")
	}
}

// frameAt builds frame i of the test scenes.
func frameAt(i int, objs ...Object) *Frame {
	return &Frame{Index: int64(i), PTS: time.Duration(i) * tick, Time: testEpoch.Add(time.Duration(i) * tick), Width: testW, Height: testH, Objects: objs}
}

func describeAll(evs []event.Event) []string {
	var out []string
	for i := range evs {
		out = append(out, describe(&evs[i]))
	}
	return out
}

// TestStore swaps declarations while tracks are in zones: an unchanged zone keeps its state and
// counts, a changed one starts afresh (the tracks inside enter again), a removed one vanishes.
func TestStore(t *testing.T) {
	other := Zone{Name: "other", Polygon: []Point{{0, 0}, {640, 0}, {640, 480}, {0, 480}}}
	s1, err := Compile(Config{Zones: []Zone{table, other}, Lines: []Line{door}})
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Stream: "cam"}, s1)
	var evs []event.Event
	evs = a.Process(evs, frameAt(0, at(1, 300, 150)))
	evs = a.Process(evs, frameAt(1, at(1, 300, 300)))
	want := []string{"f0 zone.enter other t1", "f1 zone.enter table t1", "f1 line.cross door t1 in"}
	if got := describeAll(evs); !equalLists(got, want) {
		t.Fatalf("before: %q", got)
	}
	// table unchanged, other's polygon changed, door removed, a new line added.
	changed := other
	changed.Polygon = []Point{{0, 0}, {600, 0}, {600, 480}, {0, 480}}
	s2, err := Compile(Config{Zones: []Zone{changed, table}, Lines: []Line{{Name: "new", Points: []Point{{0, 320}, {640, 320}}}}})
	if err != nil {
		t.Fatal(err)
	}
	a.Store(s2)
	if a.Set() != s2 {
		t.Fatal("Set")
	}
	evs = a.Process(evs[:0], frameAt(2, at(1, 300, 310)))
	evs = a.Process(evs, frameAt(3, at(1, 300, 420)))
	want = []string{"f2 zone.enter other t1", "f3 zone.leave table t1 dwell=200ms", "f3 line.cross new t1 in"}
	if got := describeAll(evs); !equalLists(got, want) {
		t.Fatalf("after: %q", got)
	}
	var m Metrics
	a.Metrics(&m)
	wantZones := []ZoneCount{{Zone: "other", Class: "person", Objects: 1, Enter: 1}, {Zone: "table", Class: "person", Enter: 1, Leave: 1}}
	if len(m.Zones) != 2 || m.Zones[0] != wantZones[0] || m.Zones[1] != wantZones[1] {
		t.Fatalf("zones %+v", m.Zones)
	}
	if len(m.Lines) != 1 || m.Lines[0] != (LineCount{Line: "new", Class: "person", In: 1}) {
		t.Fatalf("lines %+v", m.Lines)
	}
	// Removing everything: no events, no rows.
	a.Store(nil)
	evs = a.Process(evs[:0], frameAt(4, at(1, 300, 150)))
	evs = a.Flush(evs)
	a.Metrics(&m)
	if len(evs) != 0 || len(m.Zones)+len(m.Lines) != 0 {
		t.Fatalf("%q %+v", describeAll(evs), m)
	}
}

// TestPTSBackwards: a new timeline ends every track as of the last frame of the old one.
func TestPTSBackwards(t *testing.T) {
	s, _ := Compile(Config{Zones: []Zone{table}, TrackEvents: true})
	a := New(Options{Stream: "cam"}, s)
	var evs []event.Event
	evs = a.Process(evs, frameAt(10, at(1, 300, 300)))
	evs = a.Process(evs, frameAt(11, at(1, 300, 300)))
	evs = a.Process(evs, frameAt(0, at(1, 300, 300)))
	want := []string{"f10 track.start t1", "f10 zone.enter table t1", "f11 zone.leave table t1 dwell=100ms", "f11 track.end t1",
		"f0 track.start t1", "f0 zone.enter table t1"}
	if got := describeAll(evs); !equalLists(got, want) {
		t.Fatalf("%q", got)
	}
}

// TestWallClock: frames without a wall-clock time get Options.Now's; events carry the
// frame's, and their ids its millisecond.
func TestWallClock(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 6e6, time.UTC)
	s, _ := Compile(Config{TrackEvents: true})
	a := New(Options{Stream: "cam", Now: func() time.Time { return now }}, s)
	evs := a.Process(nil, &Frame{Objects: []Object{at(1, 1, 1)}})
	if len(evs) != 1 || !evs[0].Time.Equal(now) || !evs[0].ID.Time().Equal(now) {
		t.Fatalf("%+v", evs)
	}
	f := frameAt(1, at(2, 1, 1))
	evs = a.Process(evs[:0], f)
	if !evs[0].Time.Equal(f.Time) {
		t.Fatalf("%v", evs[0].Time)
	}
}

// TestProcessAllocs: steady state allocates nothing, with tracks coming and going.
func TestProcessAllocs(t *testing.T) {
	b := newBench(50)
	b.warm()
	if n := testing.AllocsPerRun(200, b.step); n != 0 {
		t.Fatalf("%v allocs per frame", n)
	}
	if b.events == 0 {
		t.Fatal("no events: the scene does not exercise the analytics")
	}
}

// TestConcurrent reads metrics and swaps declarations from other goroutines while frames are
// processed (run with -race).
func TestConcurrent(t *testing.T) {
	s1, _ := Compile(benchConfig())
	c2 := benchConfig()
	c2.Zones = c2.Zones[:2]
	s2, _ := Compile(c2)
	b := newBench(20)
	b.a.Store(s1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		var m Metrics
		for {
			select {
			case <-done:
				return
			default:
			}
			b.a.Metrics(&m)
			b.a.Occupancy("nw", "")
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if i%2 == 0 {
				b.a.Store(s2)
			} else {
				b.a.Store(s1)
			}
			_ = b.a.Set().Config()
		}
	}()
	for range 300 {
		b.step()
	}
	close(done)
	wg.Wait()
}
