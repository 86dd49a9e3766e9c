package analytics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
)

// Test scenes run at 10 frames per second on a 640×480 frame; PTS = index·100 ms.
const (
	testW, testH = 640, 480
	tick         = 100 * time.Millisecond
)

var testEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at returns a person whose box's bottom-center is (x, y).
func at(id int64, x, y float32) Object { return atC(id, "person", x, y) }

// atC returns an object of class label whose box's bottom-center is (x, y).
func atC(id int64, label string, x, y float32) Object {
	cls := 0
	if label == "car" {
		cls = 2
	}
	return Object{TrackID: id, ClassID: cls, Label: label, Score: 0.9, Box: [4]float32{x - 10, y - 40, x + 10, y}}
}

// step is one frame of a scene: its objects, and tracks the tracker ended.
type step struct {
	objs  []Object
	ended []int64
}

// path returns steps moving track id in a straight line from (x0,y0) to (x1,y1) in n frames
// (both ends included).
func path(id int64, x0, y0, x1, y1 float32, n int) []step {
	out := make([]step, n)
	for i := range n {
		f := float32(i) / float32(max(n-1, 1))
		out[i].objs = []Object{at(id, x0+f*(x1-x0), y0+f*(y1-y0))}
	}
	return out
}

// points returns one step per y for track id at x.
func ys(id int64, x float32, y ...float32) []step {
	out := make([]step, len(y))
	for i, v := range y {
		out[i].objs = []Object{at(id, x, v)}
	}
	return out
}

// gap returns n empty frames.
func gap(n int) []step { return make([]step, n) }

func seq(parts ...[]step) []step {
	var out []step
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// merge overlays scenes frame by frame (objects of all at each index).
func merge(scenes ...[]step) []step {
	var out []step
	for _, s := range scenes {
		for i, st := range s {
			if i >= len(out) {
				out = append(out, step{})
			}
			out[i].objs = append(out[i].objs, st.objs...)
			out[i].ended = append(out[i].ended, st.ended...)
		}
	}
	return out
}

// describe writes e compactly: "f12 zone.leave table t1 dwell=1.5s", "f3 line.cross door t2 in".
func describe(e *event.Event) string {
	s := fmt.Sprintf("f%d %s", e.Frame, e.Type)
	switch e.Type {
	case event.LineCross:
		s += fmt.Sprintf(" %s t%d %s", e.Line, e.TrackID, e.Direction)
	case event.ZoneEnter:
		s += fmt.Sprintf(" %s t%d", e.Zone, e.TrackID)
	case event.ZoneLeave, event.ZoneLoiter:
		s += fmt.Sprintf(" %s t%d dwell=%v", e.Zone, e.TrackID, e.Dwell)
	default:
		s += fmt.Sprintf(" t%d", e.TrackID)
	}
	return s
}

// run plays steps through a new Analyzer for c, then Flush when flush is set; it checks the
// fields every event must have and returns the events described.
func run(t *testing.T, c Config, steps []step, flush bool) ([]string, *Analyzer) {
	t.Helper()
	s, err := Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	a := New(Options{Stream: "cam", IDs: event.NewGenerator([32]byte{})}, s)
	var all []event.Event
	for i, st := range steps {
		f := &Frame{Index: int64(i), PTS: time.Duration(i) * tick, Time: testEpoch.Add(time.Duration(i) * tick), Width: testW, Height: testH, Objects: st.objs, Ended: st.ended}
		n := len(all)
		all = a.Process(all, f)
		for _, e := range all[n:] {
			if e.Frame != f.Index || e.PTS != f.PTS || !e.Time.Equal(f.Time) {
				t.Fatalf("%s: frame %d pts %v time %v", describe(&e), f.Index, f.PTS, f.Time)
			}
		}
	}
	if flush {
		all = a.Flush(all)
	}
	var out []string
	for i := range all {
		e := &all[i]
		if e.Stream != "cam" || e.ID.IsZero() || (i > 0 && string(all[i-1].ID.Append(nil)) >= string(e.ID.Append(nil))) {
			t.Fatalf("event %d %s: stream %q id %v", i, describe(e), e.Stream, e.ID)
		}
		if e.Dwell < 0 {
			t.Fatalf("%s: negative dwell", describe(e))
		}
		out = append(out, describe(e))
	}
	return out, a
}

func equalLists(got, want []string) bool {
	return strings.Join(got, "\n") == strings.Join(want, "\n")
}
