package analytics_test

import (
	"fmt"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/event"
)

func Example() {
	set, err := analytics.Compile(analytics.Config{
		Zones: []analytics.Zone{{Name: "table", Polygon: []analytics.Point{{200, 250}, {440, 250}, {440, 400}, {200, 400}}}},
		Lines: []analytics.Line{{Name: "door", Points: []analytics.Point{{100, 200}, {500, 200}}}},
	})
	if err != nil {
		panic(err)
	}
	a := analytics.New(analytics.Options{Stream: "lobby"}, set)
	var events []event.Event
	for i, y := range []float32{150, 230, 300, 420} {
		f := &analytics.Frame{
			Index: int64(i), PTS: time.Duration(i) * 100 * time.Millisecond, Width: 640, Height: 480,
			Objects: []analytics.Object{{TrackID: 7, Label: "person", Score: 0.9, Box: [4]float32{290, y - 40, 310, y}}},
		}
		events = a.Process(events[:0], f)
		for _, e := range events {
			fmt.Println(e.Frame, e.Type, e.Line+e.Zone, e.Direction, e.Dwell)
		}
	}
	n, _ := a.Occupancy("table", "person")
	fmt.Println("in table:", n)
	// Output:
	// 1 line.cross door in 0s
	// 2 zone.enter table  0s
	// 3 zone.leave table  100ms
	// in table: 0
}
