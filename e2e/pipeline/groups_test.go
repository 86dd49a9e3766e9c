package e2e_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/objects"
	"github.com/vinfer/vinfer/sink"
)

// vehicleLabels are the COCO labels YOLOX-Nano gives the cars of car-detection.mp4, seen from
// above (assets/MANIFEST.md: cell phone, suitcase, bus, truck, and car).
var vehicleLabels = []string{"car", "truck", "bus", "motorbike", "cell phone", "suitcase", "remote", "mouse", "laptop", "book", "skateboard"}

// lineRows are the heights of the counting lines across the frame, in pixels of 432: every car
// drives through all of them.
var lineRows = []float64{130, 170, 216, 260, 300}

// lines returns a line across the frame at each of lineRows, counting classes at the box's
// centre.
func lines(classes []string) []analytics.Line {
	var ls []analytics.Line
	for _, y := range lineRows {
		ls = append(ls, analytics.Line{Name: fmt.Sprintf("y%.0f", y), Points: []analytics.Point{{0, y}, {768, y}}, Classes: classes, Anchor: analytics.Center})
	}
	return ls
}

// carCrossings runs car-detection.mp4 (768×432, four cars driving through one after the
// other, each across the middle of the frame) through YOLOX-Nano with a low score threshold
// and a line across the frame's middle counting classes, and returns the line.cross events.
func carCrossings(t *testing.T, rules objects.Rules, classes []string) ([]event.Event, runStats) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "events.jsonl")
	thr := float32(0.2)
	cfg := &config.Config{
		Models: []config.Model{{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx"), ScoreThreshold: &thr}},
		Output: config.Output{Sinks: []config.Sink{app.NewEventsSink(out)}},
	}
	dets := &detSink{}
	a := apptest.MustApp(t, cfg, app.Options{Sinks: []sink.Sink{dets}})
	s := config.Stream{ID: "lot", Source: filepath.Join(assets(t), "videos", "car-detection.mp4"), Model: "m",
		Config:  analytics.Config{Lines: lines(classes)},
		Tracker: &config.Tracker{TrackThresh: 0.3, NewTrackThresh: 0.35}, Rules: rules}
	if err := a.AddStream(s); err != nil {
		t.Fatal(err)
	}
	a.Pipeline.Wait()
	var rs runStats
	st, ok := a.Pipeline.Stream("lot")
	if !ok || st.Scene == nil {
		t.Fatalf("stream lot: %v, scene %v", ok, st.Scene)
	}
	rs.counters = st.Stats.Counters()
	rs.dets = dets.all()
	st.Scene.Metrics(&rs.lines)
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var crossings []event.Event
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%v: %s", err, sc.Text())
		}
		if e.Type == event.LineCross {
			crossings = append(crossings, e)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return crossings, rs
}

// runStats are a run's stream counters, line metrics and detections.
type runStats struct {
	counters defs.StreamCounters
	lines    analytics.Metrics
	dets     []detect.Detection
}

// detSink keeps every result's detections.
type detSink struct {
	mu   sync.Mutex
	dets []detect.Detection
}

func (d *detSink) Write(r *sink.Result) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dets = append(d.dets, r.Detections...)
	return nil
}

func (d *detSink) all() []detect.Detection {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.dets)
}

// TestGroupCountsEachVehicleOnce: with the labels the detector gives cars seen from above
// grouped as vehicle, the counting lines across the shared car clip count each of its four cars
// at most once per line, as one track from line to line (NMS and tracking across the group's
// classes), every crossing carrying its group. Without the group (the same classes listed on the
// lines), the red car, labelled suitcase, cell phone and bus in turn, is three tracks and two
// lines count it twice (6 tracks for 4 cars).
func TestGroupCountsEachVehicleOnce(t *testing.T) {
	rules := objects.Rules{Groups: map[string][]string{"vehicle": vehicleLabels},
		// The painted marking at the top right is a kite to YOLOX-Nano on most frames; cars
		// entering or leaving the picture are slivers.
		Masks:   []objects.Mask{{Name: "marking", Polygon: []analytics.Point{{550, 0}, {640, 0}, {640, 50}, {550, 50}}}},
		Filters: []objects.Filter{{Classes: []string{"vehicle"}, MinArea: 0.02, Normalized: true}}}
	got, rs := carCrossings(t, rules, []string{"vehicle"})
	for _, d := range rs.dets {
		cx, cy := (d.Box[0]+d.Box[2])/2, (d.Box[1]+d.Box[3])/2
		if cx >= 550 && cx <= 640 && cy <= 50 {
			t.Errorf("detection %+v in the mask", d)
		}
		if area := (d.Box[2] - d.Box[0]) * (d.Box[3] - d.Box[1]); slices.Contains(vehicleLabels, d.Label) && area < 0.02*768*432 {
			t.Errorf("vehicle %+v of %.0f px² passed the filter", d, area)
		}
	}
	if rs.counters.Masked == 0 || rs.counters.Filtered == 0 {
		t.Errorf("masked %d, filtered %d", rs.counters.Masked, rs.counters.Filtered)
	}
	type key struct {
		line  string
		track int64
	}
	seen := map[key]bool{}
	tracks := map[int64]bool{}
	perLine := map[string][2]int{}
	for _, e := range got {
		t.Logf("%s %s track %d %s (%s) %.2f at %v", e.Line, e.Direction, e.TrackID, e.Label, e.Group, e.Score, e.PTS)
		if e.Group != "vehicle" || !slices.Contains(vehicleLabels, e.Label) {
			t.Errorf("crossing %+v: label %q group %q, want a vehicle label and group vehicle", e, e.Label, e.Group)
		}
		k := key{e.Line, e.TrackID}
		if seen[k] {
			t.Errorf("track %d crossed line %s twice", e.TrackID, e.Line)
		}
		seen[k], tracks[e.TrackID] = true, true
		c := perLine[e.Line]
		c[e.Direction-event.In]++
		perLine[e.Line] = c
	}
	// Two cars drive up the frame (out: from the right of a left-to-right line to its left,
	// upwards in image coordinates) and two down: no line counts more.
	for line, c := range perLine {
		if c[0] > 2 || c[1] > 2 {
			t.Errorf("line %s: %d in, %d out; the clip has 2 cars each way", line, c[0], c[1])
		}
	}
	// The line metrics count the group; NMS inside the group merged overlapping labels.
	for _, l := range rs.lines.Lines {
		if l.Class != "vehicle" {
			t.Errorf("line metrics row %+v: class %q, want vehicle", l, l.Class)
		}
	}
	if len(rs.lines.Lines) != len(lineRows) || rs.counters.Merged == 0 {
		t.Errorf("%d line metrics rows, %d detections merged: %+v", len(rs.lines.Lines), rs.counters.Merged, rs.counters)
	}
	// Each of the 5 lines crosses the path of every car, but a car may enter the picture
	// already past the lowest: most crossings must be there, by 4 tracks.
	if len(tracks) != 4 || len(got) < 4*len(lineRows)-3 {
		t.Fatalf("%d crossings by %d tracks, want about %d by the clip's 4 cars", len(got), len(tracks), 4*len(lineRows))
	}
}

// TestGroupClassesChecked: adding a stream checks its groups, filters and masks against the
// model's labels, and its zones and lines may name a group but nothing else unknown; each
// error names the field.
func TestGroupClassesChecked(t *testing.T) {
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx")}}}
	a := apptest.MustApp(t, cfg, app.Options{})
	defer a.Stop()
	s := config.Stream{ID: "lot", Source: filepath.Join(assets(t), "videos", "car-detection.mp4"), Model: "m",
		Config: analytics.Config{Lines: []analytics.Line{{Name: "gate", Points: []analytics.Point{{0, 200}, {768, 200}}, Classes: []string{"vehicles"}}}},
		Rules: objects.Rules{Groups: map[string][]string{"vehicle": {"car", "truk"}},
			Filters: []objects.Filter{{Classes: []string{"vehicle", "persn"}, MinArea: 100}}}}
	err := a.AddStream(s)
	for _, want := range []string{`groups.vehicle[1] "truk": is not a label of the model`, `filters[0]: classes[1] "persn"`, `lines[0] "gate": classes[0]: unknown class "vehicles"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("AddStream: %v; want it to say %s", err, want)
		}
	}
	s.Groups["vehicle"][1] = "truck"
	s.Filters[0].Classes = []string{"vehicle", "person"}
	s.Lines[0].Classes = []string{"vehicle", "person"}
	if err := a.AddStream(s); err != nil {
		t.Fatal(err)
	}
}
