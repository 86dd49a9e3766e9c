package analytics

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	neg := -1.0
	nan := math.NaN()
	sq := []Point{{10, 10}, {100, 10}, {100, 100}, {10, 100}}
	cases := []struct {
		name string
		cfg  Config
		err  error  // nil: valid
		msg  string // in the error text
	}{
		{"valid", Config{Zones: []Zone{table}, Lines: []Line{door}}, nil, ""},
		{"valid normalized", Config{Zones: []Zone{tableNrm}, Lines: []Line{doorNorm}}, nil, ""},
		{"valid concave", Config{Zones: []Zone{{Name: "c", Polygon: []Point{{10, 10}, {100, 10}, {50, 40}, {100, 100}, {10, 100}}}}}, nil, ""},
		{"empty zone name", Config{Zones: []Zone{{Polygon: sq}}}, ErrEmpty, "zones[0]: name"},
		{"empty line name", Config{Lines: []Line{{Points: door.Points}}}, ErrEmpty, "lines[0]: name"},
		{"duplicate zone names", Config{Zones: []Zone{table, table}}, ErrDuplicateName, `zones[1]: name: duplicate name "table" (also zones[0])`},
		{"zone and line share a name", Config{Zones: []Zone{{Name: "x", Polygon: sq}}, Lines: []Line{{Name: "x", Points: door.Points}}}, ErrDuplicateName, "lines[0]"},
		{"2-point polygon", Config{Zones: []Zone{{Name: "z", Polygon: sq[:2]}}}, ErrTooFewPoints, `zones[0] "z": polygon: fewer than 3 points, got 2`},
		{"no polygon", Config{Zones: []Zone{{Name: "z"}}}, ErrTooFewPoints, "got 0"},
		{"bow tie", Config{Zones: []Zone{{Name: "bow", Polygon: []Point{{10, 10}, {100, 100}, {100, 10}, {10, 100}}}}}, ErrSelfIntersecting, `zones[0] "bow": polygon: self-intersecting: edges 0 and 2 cross`},
		{"touching itself", Config{Zones: []Zone{{Name: "t", Polygon: []Point{{10, 10}, {100, 10}, {55, 10}, {55, 80}}}}}, ErrSelfIntersecting, "polygon"},
		{"fold back", Config{Zones: []Zone{{Name: "f", Polygon: []Point{{10, 10}, {100, 10}, {50, 10}}}}}, ErrSelfIntersecting, "polygon"},
		{"collinear", Config{Zones: []Zone{{Name: "c", Polygon: []Point{{10, 10}, {50, 10}, {100, 10}}}}}, ErrSelfIntersecting, "edges 0 and 2"},
		{"repeated point", Config{Zones: []Zone{{Name: "r", Polygon: []Point{{10, 10}, {10, 10}, {100, 10}, {100, 100}}}}}, ErrDegenerate, "point 1 repeats point 0"},
		{"line of 3 points", Config{Lines: []Line{{Name: "l", Points: []Point{{1, 1}, {5, 5}, {9, 9}}}}}, ErrLinePoints, `lines[0] "l": points: want exactly 2 points, got 3`},
		{"zero-length line", Config{Lines: []Line{{Name: "l", Points: []Point{{5, 5}, {5, 5}}}}}, ErrZeroLength, `lines[0] "l": points: zero length`},
		{"negative zone inertia", Config{Zones: []Zone{withZone(table, func(z *Zone) { z.Inertia = -2 })}}, ErrNegative, `zones[0] "table": inertia: negative (-2)`},
		{"negative line inertia", Config{Lines: []Line{withLine(door, func(l *Line) { l.Inertia = -1 })}}, ErrNegative, `lines[0] "door": inertia`},
		{"negative loiter", Config{Zones: []Zone{withZone(table, func(z *Zone) { z.Loiter = -1 })}}, ErrNegative, "loiter"},
		{"negative margin", Config{Lines: []Line{withLine(door, func(l *Line) { l.Margin = &neg })}}, ErrNegative, "margin"},
		{"NaN margin", Config{Lines: []Line{withLine(door, func(l *Line) { l.Margin = &nan })}}, ErrNegative, "margin"},
		{"negative retention", Config{Retention: -1}, ErrNegative, "retention"},
		{"unknown anchor", Config{Zones: []Zone{withZone(table, func(z *Zone) { z.Anchor = "feet" })}}, ErrAnchor, `anchor: unknown anchor "feet" (want one of bottom-center, center`},
		{"empty class", Config{Lines: []Line{withLine(door, func(l *Line) { l.Classes = []string{"car", ""} })}}, ErrEmpty, "classes[1]"},
		{"NaN coordinate", Config{Zones: []Zone{{Name: "n", Polygon: []Point{{nan, 1}, {100, 10}, {100, 100}}}}}, ErrCoordinate, "polygon[0]"},
		{"infinite coordinate", Config{Lines: []Line{{Name: "i", Points: []Point{{1, 1}, {math.Inf(1), 5}}}}}, ErrCoordinate, "points[1]"},
		{"normalized above 1", Config{Zones: []Zone{withZone(tableNrm, func(z *Zone) { z.Polygon = []Point{{0.1, 0.1}, {1.2, 0.1}, {0.5, 0.9}} })}}, ErrCoordinate, "polygon[1]: bad coordinate [1.2 0.1]: normalized coordinates are within 0…1"},
		{"pixels that look normalized", Config{Lines: []Line{{Name: "l", Points: []Point{{0.1, 0.5}, {0.9, 0.5}}}}}, ErrCoordinate, "set normalized: true"},
		{"negative pixel", Config{Zones: []Zone{{Name: "z", Polygon: []Point{{-5, 10}, {100, 10}, {100, 100}}}}}, ErrOutsideFrame, "polygon[0]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, c.err) {
				t.Fatalf("%v, want %v", err, c.err)
			}
			if !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("%q does not contain %q", err, c.msg)
			}
			if _, cerr := Compile(c.cfg); cerr == nil {
				t.Fatal("Compile accepted it")
			}
		})
	}
}

func TestValidateJoinsAll(t *testing.T) {
	c := Config{Zones: []Zone{{Name: "a", Polygon: []Point{{1, 1}}, Inertia: -1}}, Lines: []Line{{Name: "a", Points: []Point{{5, 5}, {5, 5}}}}}
	err := c.Validate()
	for _, want := range []error{ErrTooFewPoints, ErrNegative, ErrDuplicateName, ErrZeroLength} {
		if !errors.Is(err, want) {
			t.Errorf("missing %v in %v", want, err)
		}
	}
}

func TestCheck(t *testing.T) {
	labels := []string{"person", "bicycle", "car"}
	cases := []struct {
		name string
		cfg  Config
		w, h int
		lab  []string
		err  error
		msg  string
	}{
		{"inside", Config{Zones: []Zone{table}, Lines: []Line{door}}, 640, 480, labels, nil, ""},
		{"on the border", Config{Zones: []Zone{{Name: "all", Polygon: []Point{{0, 0}, {640, 0}, {640, 480}, {0, 480}}}}}, 640, 480, labels, nil, ""},
		{"zone outside", Config{Zones: []Zone{table}}, 320, 240, labels, ErrOutsideFrame, `zones[0] "table": polygon[0]: outside the frame [200 250] of 320×240`},
		{"line outside", Config{Lines: []Line{door}}, 400, 480, labels, ErrOutsideFrame, `lines[0] "door": points[1]`},
		{"normalized fits any frame", Config{Zones: []Zone{tableNrm}, Lines: []Line{doorNorm}}, 16, 16, labels, nil, ""},
		{"size unknown", Config{Zones: []Zone{table}}, 0, 0, labels, nil, ""},
		{"unknown class", Config{Zones: []Zone{withZone(table, func(z *Zone) { z.Classes = []string{"person", "unicorn"} })}}, 640, 480, labels, ErrUnknownClass, `zones[0] "table": classes[1]: unknown class "unicorn"`},
		{"unknown line class", Config{Lines: []Line{withLine(door, func(l *Line) { l.Classes = []string{"truck"} })}}, 640, 480, labels, ErrUnknownClass, `lines[0] "door": classes[0]`},
		{"labels unknown", Config{Lines: []Line{withLine(door, func(l *Line) { l.Classes = []string{"truck"} })}}, 640, 480, nil, nil, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Check(c.w, c.h, c.lab)
			if c.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, c.err) || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("%v, want %v with %q", err, c.err, c.msg)
			}
		})
	}
}
