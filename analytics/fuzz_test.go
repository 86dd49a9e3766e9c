package analytics

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
)

// FuzzConfig decodes fuzzed JSON declarations. Validate and Check must not panic; a Config that
// validates must compile and run frames (objects anywhere, frame sizes including 0) without
// panicking, with balanced zone events.
func FuzzConfig(f *testing.F) {
	for _, c := range analyticsCases() {
		b, _ := json.Marshal(c.cfg)
		f.Add(b)
	}
	b, _ := json.Marshal(benchConfig())
	f.Add(b)
	f.Add([]byte(`{"zones":[{"name":"z","polygon":[[0,0],[1e308,0],[0,1e308]]}]}`))
	f.Add([]byte(`{"lines":[{"name":"l","points":[[0,0],[5e-324,0]],"margin":0}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Config
		if json.Unmarshal(data, &c) != nil {
			return
		}
		_ = c.Check(640, 480, []string{"person", "car"})
		if c.Validate() != nil {
			return
		}
		s, err := Compile(c)
		if err != nil {
			t.Fatalf("validated but Compile: %v", err)
		}
		a := New(Options{Stream: "f", IDs: event.NewGenerator([32]byte{})}, s)
		var evs []event.Event
		sizes := [][2]int{{640, 480}, {0, 0}, {1, 1}, {640, 480}}
		for i := range 24 {
			fw := sizes[i%len(sizes)]
			objs := []Object{
				at(1, float32(i*40%700)-30, float32(i*53%520)-20),
				atC(2, "car", 320, float32(i*20)),
				{TrackID: 3, Label: "person", Box: [4]float32{1e30, -1e30, 3e38, 3e38}},
			}
			evs = a.Process(evs, &Frame{Index: int64(i), PTS: time.Duration(i) * tick, Width: fw[0], Height: fw[1], Objects: objs})
		}
		evs = a.Flush(evs)
		checkEvents(t, a, evs, true)
	})
}

// checkEvents checks zone events per track and zone: enter, then optionally one loiter, then
// leave, and so on; every event has a valid type; occupancy agrees and is never negative;
// after a Flush (done) nothing is left inside.
func checkEvents(t *testing.T, a *Analyzer, evs []event.Event, done bool) {
	t.Helper()
	type key struct {
		zone  string
		track int64
	}
	inside := map[key]int{} // 0 out, 1 in, 2 in and loitered
	for i := range evs {
		e := &evs[i]
		if !e.Type.Valid() || e.Dwell < 0 {
			t.Fatalf("event %d: %+v", i, e)
		}
		k := key{e.Zone, e.TrackID}
		switch e.Type {
		case event.ZoneEnter:
			if inside[k] != 0 {
				t.Fatalf("event %d %s: already inside", i, describe(e))
			}
			inside[k] = 1
		case event.ZoneLoiter:
			if inside[k] != 1 {
				t.Fatalf("event %d %s: state %d", i, describe(e), inside[k])
			}
			inside[k] = 2
		case event.ZoneLeave:
			if inside[k] == 0 {
				t.Fatalf("event %d %s: not inside", i, describe(e))
			}
			delete(inside, k)
		case event.LineCross:
			if e.Direction != event.In && e.Direction != event.Out {
				t.Fatalf("event %d %s: direction", i, describe(e))
			}
		}
	}
	occ := map[string]int64{}
	for k := range inside {
		occ[k.zone]++
	}
	var m Metrics
	a.Metrics(&m)
	got := map[string]int64{}
	for _, z := range m.Zones {
		if z.Objects < 0 || z.Objects != int64(z.Enter)-int64(z.Leave) {
			t.Fatalf("%+v", z)
		}
		got[z.Zone] += z.Objects
	}
	for z, n := range occ {
		if got[z] != n {
			t.Fatalf("zone %s: occupancy %d, events say %d", z, got[z], n)
		}
	}
	if done && len(inside) != 0 {
		t.Fatalf("inside after Flush: %v", inside)
	}
}

// FuzzTracks plays fuzzed track sequences through the bench declarations (4 zones, 4 lines)
// plus a zone added and removed on the way. Bytes drive each frame: a control byte (gap in
// PTS, PTS going back, swap of declarations, tracks ended), then objects of 3 bytes (track id
// 0…15 and class, x, y over and beyond the frame). Nothing may panic and checkEvents holds
// after every frame and after the Flush.
func FuzzTracks(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x03, 1, 100, 100, 2, 150, 150, 3, 200, 200, 0x03, 1, 110, 120, 2, 160, 170, 3, 200, 220})
	seed := make([]byte, 0, 600)
	for i := range 60 {
		seed = append(seed, byte(i%8)<<4|3)
		for k := range 3 {
			seed = append(seed, byte(k), byte(i*4+k*30), byte(i*3+k*50))
		}
	}
	f.Add(seed)
	f.Fuzz(playTracks)
}

// playTracks is FuzzTracks' body.
func playTracks(t *testing.T, data []byte) {
	{
		base := benchConfig()
		sets := make([]*Set, 4)
		for i := range sets {
			c := base
			c.Zones = append([]Zone(nil), base.Zones...)
			if i&1 == 1 {
				c.Zones = append(c.Zones, Zone{Name: "extra", Polygon: []Point{{100, 100}, {540, 100}, {320, 400}}, Inertia: 2, Loiter: Duration(time.Second)})
			}
			if i&2 == 2 {
				c.Retention = Duration(300 * time.Millisecond)
			}
			s, err := Compile(c)
			if err != nil {
				t.Fatal(err)
			}
			sets[i] = s
		}
		a := New(Options{Stream: "f", IDs: event.NewGenerator([32]byte{})}, sets[0])
		cur := 0
		var all, evs []event.Event
		var objs []Object
		var ended []int64
		pts := time.Duration(0)
		for i := 0; len(data) > 0; i++ {
			ctl := data[0]
			data = data[1:]
			n := int(ctl & 0x0f)
			switch ctl >> 4 {
			case 1:
				pts += 3 * time.Second
			case 2:
				pts -= 500 * time.Millisecond
			case 3:
				next := int(data0(data)) % len(sets)
				if next&1 == 0 && cur&1 == 1 {
					all = forget(all, "extra") // removed: its visits end without events
				}
				cur = next
				a.Store(sets[cur])
			case 4:
				ended = append(ended[:0], int64(data0(data)&15), int64(data0(data)>>4))
			}
			pts += 40 * time.Millisecond
			objs = objs[:0]
			for ; n > 0 && len(data) >= 3; n-- {
				label := "person"
				if data[0]&0x80 != 0 {
					label = "car"
				}
				x, y := float32(data[1])*3-60, float32(data[2])*2.2-40
				objs = append(objs, atC(int64(data[0]&15), label, x, y))
				data = data[3:]
			}
			evs = a.Process(evs[:0], &Frame{Index: int64(i), PTS: pts, Width: 640, Height: 480, Objects: objs, Ended: ended})
			ended = ended[:0]
			all = append(all, evs...)
			checkEvents(t, a, all, false)
		}
		all = a.Flush(all)
		checkEvents(t, a, all, true)
		// Track events: start and end alternate per track.
		live := map[int64]bool{}
		for _, e := range all {
			switch e.Type {
			case event.TrackStart:
				if live[e.TrackID] {
					t.Fatalf("track %d started twice", e.TrackID)
				}
				live[e.TrackID] = true
			case event.TrackEnd:
				if !live[e.TrackID] {
					t.Fatalf("track %d ended before starting", e.TrackID)
				}
				delete(live, e.TrackID)
			}
		}
		if len(live) != 0 {
			t.Fatal(fmt.Sprint("tracks alive after Flush: ", live))
		}
	}
}

func data0(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// forget drops the zone's events, as if it had never existed, for checkEvents.
func forget(evs []event.Event, zone string) []event.Event {
	out := evs[:0:0]
	for _, e := range evs {
		if e.Zone != zone {
			out = append(out, e)
		}
	}
	return out
}
