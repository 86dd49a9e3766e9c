package pipeline

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/sink"
)

// TestSceneEnd: tracked detections get track ids, a track entering a zone gives zone.enter, and
// the stream's end gives zone.leave for the track still inside, at the last frame.
func TestSceneEnd(t *testing.T) {
	s := config.Stream{ID: "s", Config: analytics.Config{Zones: []analytics.Zone{
		{Name: "z", Polygon: []analytics.Point{{0, 0}, {200, 0}, {200, 200}, {0, 200}}}}}}
	sc, err := newScene(&s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []event.Type
	r := &sink.Result{Stream: "s", Width: 640, Height: 360}
	for i := range 10 {
		r.Frame, r.PTS = int64(i), time.Duration(i)*100*time.Millisecond
		r.Detections = append(r.Detections[:0], detect.Detection{Label: "person", Score: 0.9, Box: [4]float32{50, 50, 100, 150}})
		sc.process(r)
		if r.Detections[0].TrackID == 0 && i > 1 {
			t.Fatalf("frame %d: no track id", i)
		}
		for _, e := range r.Events {
			types = append(types, e.Type)
		}
	}
	end := &sink.Result{Detections: r.Detections, Events: r.Events}
	sc.end(end)
	if end.Frame != 9 || end.Stream != "s" || len(end.Detections) != 0 || len(end.Events) != 1 || end.Events[0].Type != event.ZoneLeave {
		t.Fatalf("end result %+v", end)
	}
	if len(types) != 1 || types[0] != event.ZoneEnter {
		t.Fatalf("events while running: %v", types)
	}
	if n := testing.AllocsPerRun(100, func() {
		r.Frame++
		r.PTS += 100 * time.Millisecond
		r.Detections = append(r.Detections[:0], detect.Detection{Label: "person", Score: 0.9, Box: [4]float32{50, 50, 100, 150}})
		sc.process(r)
	}); n != 0 {
		t.Fatalf("scene.process allocates %v times per frame", n)
	}
}

// TestSceneNone: tracker: none gives no scene (detections keep track id 0).
func TestSceneNone(t *testing.T) {
	sc, err := newScene(&config.Stream{ID: "s", Tracker: &config.Tracker{Disabled: true}}, nil)
	if sc != nil || err != nil {
		t.Fatal(sc, err)
	}
}
