package analytics

import (
	"fmt"
	"time"
)

// Config declares the zones and lines of one stream. The configuration file and the HTTP API
// embed it as is:
//
//	zones:
//	  - {name: table, polygon: [[300,200],[700,200],[700,430],[300,430]], classes: [person], loiter: 30s}
//	lines:
//	  - {name: door, points: [[0.1,0.9],[0.9,0.9]], normalized: true, inertia: 2}
//	track_events: false
//	retention: 2s
//
// Names are unique among zones and lines together.
type Config struct {
	Zones []Zone `yaml:"zones,omitempty" json:"zones,omitempty"`
	Lines []Line `yaml:"lines,omitempty" json:"lines,omitempty"`
	// TrackEvents emits track.start and track.end (off by default).
	TrackEvents bool `yaml:"track_events,omitempty" json:"track_events,omitempty"`
	// Retention is how long a track that is no longer seen keeps its zone and line state before
	// it ends (zone.leave, track.end), measured in PTS. It must be at least the tracker's track
	// buffer, so that a track found again is not counted twice. 0: DefaultRetention.
	Retention Duration `yaml:"retention,omitempty" json:"retention,omitempty"`
}

// DefaultRetention is Config.Retention's default.
const DefaultRetention = 2 * time.Second

// Point is [x, y]: pixels of the decoded frame (x right, y down, origin at the top-left corner
// of the top-left pixel), or fractions 0…1 of its width and height when the shape is normalized.
type Point [2]float64

// Zone is a polygon; a track is in it while the anchor point of its box is inside.
type Zone struct {
	// Name identifies the zone in events and metrics.
	Name string `yaml:"name" json:"name"`
	// Polygon has at least 3 vertices, in order, not self-intersecting; it closes by itself.
	Polygon []Point `yaml:"polygon" json:"polygon"`
	// Normalized: the coordinates are fractions 0…1 of the frame's width and height.
	Normalized bool `yaml:"normalized,omitempty" json:"normalized,omitempty"`
	// Classes are the labels counted; empty: all.
	Classes []string `yaml:"classes,omitempty" json:"classes,omitempty"`
	// Anchor is the point of the box tested; "": bottom-center.
	Anchor Anchor `yaml:"anchor,omitempty" json:"anchor,omitempty"`
	// Inertia is the number of consecutive frames a track must be seen inside (outside) before
	// it enters (leaves); 0 and 1: at once.
	Inertia int `yaml:"inertia,omitempty" json:"inertia,omitempty"`
	// Loiter is the dwell time after which zone.loiter is emitted, once per visit; 0: never.
	Loiter Duration `yaml:"loiter,omitempty" json:"loiter,omitempty"`
}

// Line is a directed segment P1→P2. A track crosses it when its anchor moves from one side to
// the other through the segment (not merely the infinite line): `in` from the left of P1→P2 to
// its right, `out` the reverse. In image coordinates (y down), for a line drawn left to right,
// `in` is a move downwards.
type Line struct {
	// Name identifies the line in events and metrics.
	Name string `yaml:"name" json:"name"`
	// Points are exactly 2 distinct points, [P1, P2].
	Points []Point `yaml:"points" json:"points"`
	// Normalized: the coordinates are fractions 0…1 of the frame's width and height.
	Normalized bool `yaml:"normalized,omitempty" json:"normalized,omitempty"`
	// Classes are the labels counted; empty: all.
	Classes []string `yaml:"classes,omitempty" json:"classes,omitempty"`
	// Anchor is the point of the box tested; "": bottom-center.
	Anchor Anchor `yaml:"anchor,omitempty" json:"anchor,omitempty"`
	// Inertia is the number of consecutive frames the anchor must be seen beyond Margin on the
	// new side before the crossing counts; 0 and 1: at once.
	Inertia int `yaml:"inertia,omitempty" json:"inertia,omitempty"`
	// Margin is the hysteresis in frame pixels: a side counts only once the anchor is farther
	// than Margin from the line, so jitter on the line crosses at most once. nil: 0.5% of the
	// frame's diagonal (4.4 px at 768×432, 11 px at 1920×1080).
	Margin *float64 `yaml:"margin,omitempty" json:"margin,omitempty"`
}

// DefaultMargin is Line.Margin's default, a fraction of the frame's diagonal.
const DefaultMargin = 0.005

// Duration is a time.Duration written as a Go duration string ("30s", "1m30s", "500ms") in
// YAML and JSON.
type Duration time.Duration

// MarshalText writes d as a Go duration string.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText parses a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("duration %q: %v (write e.g. 30s, 1m30s, 500ms)", b, err)
	}
	*d = Duration(v)
	return nil
}

// clone returns a deep copy of c.
func (c Config) clone() Config {
	out := c
	out.Zones = make([]Zone, len(c.Zones))
	for i, z := range c.Zones {
		z.Polygon = append([]Point(nil), z.Polygon...)
		z.Classes = append([]string(nil), z.Classes...)
		out.Zones[i] = z
	}
	out.Lines = make([]Line, len(c.Lines))
	for i, l := range c.Lines {
		l.Points = append([]Point(nil), l.Points...)
		l.Classes = append([]string(nil), l.Classes...)
		if l.Margin != nil {
			m := *l.Margin
			l.Margin = &m
		}
		out.Lines[i] = l
	}
	return out
}
