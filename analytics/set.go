package analytics

import (
	"slices"
	"time"
)

// Set is a validated, compiled Config. It is immutable, so one Set may be shared by several
// Analyzers and swapped in while they run (Analyzer.Store).
type Set struct {
	cfg         Config
	zones       []zoneDecl
	lines       []lineDecl
	retention   time.Duration
	trackEvents bool
}

// zoneDecl is a compiled Zone.
type zoneDecl struct {
	src     *Zone // in Set.cfg
	fx, fy  float64
	inertia int32
	loiter  time.Duration
}

// lineDecl is a compiled Line.
type lineDecl struct {
	src     *Line // in Set.cfg
	fx, fy  float64
	inertia int32
}

// Compile validates c (Config.Validate) and compiles a deep copy of it.
func Compile(c Config) (*Set, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	s := &Set{cfg: c.clone(), retention: time.Duration(c.Retention), trackEvents: c.TrackEvents}
	if s.retention == 0 {
		s.retention = DefaultRetention
	}
	for i := range s.cfg.Zones {
		z := &s.cfg.Zones[i]
		fx, fy, _ := z.Anchor.fractions()
		s.zones = append(s.zones, zoneDecl{src: z, fx: fx, fy: fy, inertia: int32(max(z.Inertia, 1)), loiter: time.Duration(z.Loiter)})
	}
	for i := range s.cfg.Lines {
		l := &s.cfg.Lines[i]
		fx, fy, _ := l.Anchor.fractions()
		s.lines = append(s.lines, lineDecl{src: l, fx: fx, fy: fy, inertia: int32(max(l.Inertia, 1))})
	}
	return s, nil
}

// Config returns a deep copy of the declarations s was compiled from.
func (s *Set) Config() Config { return s.cfg.clone() }

// sameZone reports whether a and b declare the same zone (then its state and counts carry over
// a swap).
func sameZone(a, b *Zone) bool {
	return a.Name == b.Name && slices.Equal(a.Polygon, b.Polygon) && a.Normalized == b.Normalized &&
		slices.Equal(a.Classes, b.Classes) && normAnchor(a.Anchor) == normAnchor(b.Anchor) &&
		max(a.Inertia, 1) == max(b.Inertia, 1) && a.Loiter == b.Loiter
}

// sameLine reports whether a and b declare the same line.
func sameLine(a, b *Line) bool {
	return a.Name == b.Name && slices.Equal(a.Points, b.Points) && a.Normalized == b.Normalized &&
		slices.Equal(a.Classes, b.Classes) && normAnchor(a.Anchor) == normAnchor(b.Anchor) &&
		max(a.Inertia, 1) == max(b.Inertia, 1) && (a.Margin == nil) == (b.Margin == nil) &&
		(a.Margin == nil || *a.Margin == *b.Margin)
}

func normAnchor(a Anchor) Anchor {
	if a == "" {
		return BottomCenter
	}
	return a
}
