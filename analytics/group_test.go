package analytics

import "testing"

// TestGroupClasses: a zone counting [vehicle] takes a car and a truck of group vehicle, not a
// person, and its gauge and counters are under the group's name; Occupancy answers for the
// group.
func TestGroupClasses(t *testing.T) {
	c := Config{Zones: []Zone{{Name: "lot", Polygon: []Point{{100, 100}, {300, 100}, {300, 300}, {100, 300}}, Classes: []string{"vehicle"}}}}
	grouped := func(id int64, label string, x, y float32) Object {
		o := atC(id, label, x, y)
		o.Group = "vehicle"
		return o
	}
	var steps []step
	for range 3 {
		steps = append(steps, step{objs: []Object{grouped(1, "car", 150, 200), grouped(2, "truck", 250, 200), atC(3, "person", 200, 250)}})
	}
	events, a := run(t, c, steps, false)
	if len(events) != 2 {
		t.Fatalf("events %q, want the car and the truck entering", events)
	}
	var m Metrics
	a.Metrics(&m)
	if len(m.Zones) != 1 || m.Zones[0].Class != "vehicle" || m.Zones[0].Objects != 2 {
		t.Fatalf("metrics %+v, want 2 objects of class vehicle", m.Zones)
	}
	if n, ok := a.Occupancy("lot", "vehicle"); !ok || n != 2 {
		t.Fatalf("Occupancy(lot, vehicle) = %d, %v", n, ok)
	}
}
