package analytics

import "testing"

// Shared geometry of the table cases (640×480 frame): a line "door" drawn left to right at
// y = 200 from x = 100 to 500 (in: moving down), a zone "table" from (200,250) to (440,400).
var (
	door     = Line{Name: "door", Points: []Point{{100, 200}, {500, 200}}}
	table    = Zone{Name: "table", Polygon: []Point{{200, 250}, {440, 250}, {440, 400}, {200, 400}}}
	doorNorm = Line{Name: "door", Normalized: true, Points: []Point{{100.0 / 640, 200.0 / 480}, {500.0 / 640, 200.0 / 480}}}
	tableNrm = Zone{Name: "table", Normalized: true, Polygon: []Point{{200.0 / 640, 250.0 / 480}, {440.0 / 640, 250.0 / 480}, {440.0 / 640, 400.0 / 480}, {200.0 / 640, 400.0 / 480}}}
)

func lines(l ...Line) Config { return Config{Lines: l} }
func zones(z ...Zone) Config { return Config{Zones: z} }

func withLine(l Line, f func(*Line)) Line { f(&l); return l }
func withZone(z Zone, f func(*Zone)) Zone { f(&z); return z }

// ysC is ys for an object of class label.
func ysC(id int64, label string, x float32, y ...float32) []step {
	out := make([]step, len(y))
	for i, v := range y {
		out[i].objs = []Object{atC(id, label, x, v)}
	}
	return out
}

// repeat returns v n times.
func repeat(v float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = v
	}
	return out
}

type analyticsCase struct {
	name  string
	cfg   Config
	steps []step
	flush bool
	want  []string
}

func analyticsCases() []analyticsCase {
	return []analyticsCase{
		{
			name:  "line in (moving down across a left-to-right line)",
			cfg:   lines(door),
			steps: ys(1, 300, 150, 170, 190, 210, 230),
			want:  []string{"f3 line.cross door t1 in"},
		},
		{
			name:  "line out (moving up)",
			cfg:   lines(door),
			steps: ys(1, 300, 230, 210, 190, 170),
			want:  []string{"f2 line.cross door t1 out"},
		},
		{
			name:  "line reversed (p2→p1) swaps the directions",
			cfg:   lines(withLine(door, func(l *Line) { l.Points = []Point{{500, 200}, {100, 200}} })),
			steps: seq(ys(1, 300, 150, 230), ys(2, 300, 230, 150)),
			want:  []string{"f1 line.cross door t1 out", "f3 line.cross door t2 in"},
		},
		{
			name:  "vertical line: in is right to left for a line drawn downwards",
			cfg:   lines(Line{Name: "v", Points: []Point{{320, 100}, {320, 400}}}),
			steps: path(1, 400, 300, 250, 300, 4),
			want:  []string{"f2 line.cross v t1 in"},
		},
		{
			name:  "jitter on the line crosses once",
			cfg:   lines(door),
			steps: ys(1, 300, 150, 180, 198, 202, 199, 203, 197, 201, 230, 198, 202, 199, 201, 197),
			want:  []string{"f8 line.cross door t1 in"},
		},
		{
			name:  "jitter within an explicit margin never crosses",
			cfg:   lines(withLine(door, func(l *Line) { m := 10.0; l.Margin = &m })),
			steps: ys(1, 300, 192, 208, 193, 207, 191, 209, 192, 208),
			want:  nil,
		},
		{
			name:  "margin 0: every real sign change counts",
			cfg:   lines(withLine(door, func(l *Line) { m := 0.0; l.Margin = &m })),
			steps: ys(1, 300, 190, 198, 202, 199, 203),
			want:  []string{"f2 line.cross door t1 in", "f3 line.cross door t1 out", "f4 line.cross door t1 in"},
		},
		{
			name:  "fast object jumps across between two frames",
			cfg:   lines(door),
			steps: ys(1, 300, 20, 460),
			want:  []string{"f1 line.cross door t1 in"},
		},
		{
			name:  "passing beside the segment does not cross",
			cfg:   lines(door),
			steps: merge(ys(1, 550, 150, 250, 150), ys(2, 480, 150, 250)),
			want:  []string{"f1 line.cross door t2 in"},
		},
		{
			name:  "going round the end then through the segment",
			cfg:   lines(door),
			steps: seq(ys(1, 550, 150, 250), ys(1, 300, 250, 150)),
			want:  []string{"f3 line.cross door t1 out"},
		},
		{
			name:  "first seen on a side: no crossing",
			cfg:   lines(door),
			steps: merge(ys(1, 300, 250, 260), ys(2, 300, 200, 201, 230)),
			want:  nil,
		},
		{
			name:  "line inertia 3: two frames across and back do not count",
			cfg:   lines(withLine(door, func(l *Line) { l.Inertia = 3 })),
			steps: ys(1, 300, 150, 250, 250, 150, 250, 250, 250),
			want:  []string{"f6 line.cross door t1 in"},
		},
		{
			name:  "line class filter",
			cfg:   lines(withLine(door, func(l *Line) { l.Classes = []string{"car"} })),
			steps: merge(ysC(1, "person", 300, 150, 250), ysC(2, "car", 350, 150, 250)),
			want:  []string{"f1 line.cross door t2 in"},
		},
		{
			name:  "line anchor top-center",
			cfg:   lines(withLine(door, func(l *Line) { l.Anchor = TopCenter })),
			steps: ys(1, 300, 215, 230, 250),
			want:  []string{"f2 line.cross door t1 in"},
		},
		{
			name:  "normalized line",
			cfg:   lines(doorNorm),
			steps: ys(1, 300, 150, 170, 190, 210, 230),
			want:  []string{"f3 line.cross door t1 in"},
		},
		{
			name:  "zone enter and leave",
			cfg:   zones(table),
			steps: ys(1, 300, 200, 240, 260, 300, 380, 420),
			want:  []string{"f2 zone.enter table t1", "f5 zone.leave table t1 dwell=300ms"},
		},
		{
			name:  "zone inertia 3: flicker does not enter or leave; dwell from the runs' first frames",
			cfg:   zones(withZone(table, func(z *Zone) { z.Inertia = 3 })),
			steps: ys(1, 300, 200, 300, 300, 200, 300, 300, 300, 300, 200, 200, 300, 200, 200, 200),
			want:  []string{"f6 zone.enter table t1", "f13 zone.leave table t1 dwell=700ms"},
		},
		{
			name:  "zone inertia: missing frames do not break a run",
			cfg:   zones(withZone(table, func(z *Zone) { z.Inertia = 3 })),
			steps: seq(ys(1, 300, 200, 300), gap(2), ys(1, 300, 300, 300)),
			want:  []string{"f5 zone.enter table t1"},
		},
		{
			name:  "occlusion within the retention: no re-entry",
			cfg:   zones(table),
			steps: seq(ys(1, 300, 200, 300, 300), gap(10), ys(1, 300, 300, 300, 200)),
			want:  []string{"f1 zone.enter table t1", "f15 zone.leave table t1 dwell=1.4s"},
		},
		{
			name:  "occlusion, found again outside within the retention: one leave",
			cfg:   zones(table),
			steps: seq(ys(1, 300, 200, 300, 300), gap(5), ys(1, 300, 200)),
			want:  []string{"f1 zone.enter table t1", "f8 zone.leave table t1 dwell=700ms"},
		},
		{
			name:  "occlusion past the retention: ends, then enters as new",
			cfg:   zones(table),
			steps: seq(ys(1, 300, 200, 300, 300), gap(25), ys(1, 300, 300, 200)),
			want: []string{"f1 zone.enter table t1", "f23 zone.leave table t1 dwell=100ms",
				"f28 zone.enter table t1", "f29 zone.leave table t1 dwell=100ms"},
		},
		{
			name:  "configured retention 500ms",
			cfg:   Config{Zones: []Zone{table}, Retention: Duration(500 * 1e6)},
			steps: seq(ys(1, 300, 200, 300, 300), gap(10), ys(1, 300, 300)),
			want:  []string{"f1 zone.enter table t1", "f8 zone.leave table t1 dwell=100ms", "f13 zone.enter table t1"},
		},
		{
			name:  "track ended by the tracker inside the zone",
			cfg:   zones(table),
			steps: seq(ys(1, 300, 200, 300, 300), []step{{ended: []int64{1, 99}}}, gap(30)),
			want:  []string{"f1 zone.enter table t1", "f3 zone.leave table t1 dwell=100ms"},
		},
		{
			name:  "an ended track seen on the same frame lives on",
			cfg:   zones(table),
			steps: seq(ys(1, 300, 300), []step{{objs: []Object{at(1, 300, 300)}, ended: []int64{1}}}),
			flush: true,
			want:  []string{"f0 zone.enter table t1", "f1 zone.leave table t1 dwell=100ms"},
		},
		{
			name:  "stream end inside the zone (Flush)",
			cfg:   zones(table),
			steps: ys(1, 300, 200, 300, 300, 300),
			flush: true,
			want:  []string{"f1 zone.enter table t1", "f3 zone.leave table t1 dwell=200ms"},
		},
		{
			name:  "loitering: once per visit",
			cfg:   zones(withZone(table, func(z *Zone) { z.Loiter = Duration(1e9) })),
			steps: seq(ys(1, 300, 200), ys(1, 300, repeat(300, 15)...), ys(1, 300, 200), ys(1, 300, repeat(300, 11)...)),
			want: []string{"f1 zone.enter table t1", "f11 zone.loiter table t1 dwell=1s", "f16 zone.leave table t1 dwell=1.5s",
				"f17 zone.enter table t1", "f27 zone.loiter table t1 dwell=1s"},
		},
		{
			name:  "loitering counted across an occlusion",
			cfg:   zones(withZone(table, func(z *Zone) { z.Loiter = Duration(1e9) })),
			steps: seq(ys(1, 300, 300, 300), gap(12), ys(1, 300, 300)),
			want:  []string{"f0 zone.enter table t1", "f14 zone.loiter table t1 dwell=1.4s"},
		},
		{
			name:  "zone class filter",
			cfg:   zones(withZone(table, func(z *Zone) { z.Classes = []string{"car"} })),
			steps: merge(ysC(1, "person", 300, 200, 300, 200), ysC(2, "car", 320, 200, 300, 200)),
			want:  []string{"f1 zone.enter table t2", "f2 zone.leave table t2 dwell=100ms"},
		},
		{
			name:  "normalized zone",
			cfg:   zones(tableNrm),
			steps: ys(1, 300, 200, 240, 260, 300, 380, 420),
			want:  []string{"f2 zone.enter table t1", "f5 zone.leave table t1 dwell=300ms"},
		},
		{
			name:  "zone anchor center: the box's feet inside do not count",
			cfg:   zones(withZone(table, func(z *Zone) { z.Anchor = Center })),
			steps: ys(1, 300, 200, 260, 260, 300),
			want:  []string{"f3 zone.enter table t1"},
		},
		{
			name:  "track events",
			cfg:   Config{Zones: []Zone{table}, TrackEvents: true},
			steps: merge(ys(1, 300, 200, 300, 300), ys(2, 50, 50)),
			flush: true,
			want: []string{"f0 track.start t1", "f0 track.start t2", "f1 zone.enter table t1",
				"f2 zone.leave table t1 dwell=100ms", "f2 track.end t1", "f2 track.end t2"},
		},
		{
			name:  "track events end by retention, in track id order",
			cfg:   Config{TrackEvents: true, Retention: Duration(300 * 1e6)},
			steps: seq([]step{{objs: []Object{at(9, 10, 10), at(3, 10, 10)}}}, gap(5)),
			want:  []string{"f0 track.start t9", "f0 track.start t3", "f4 track.end t3", "f4 track.end t9"},
		},
		{
			name:  "a track id twice on a frame counts once",
			cfg:   Config{Zones: []Zone{table}, Lines: []Line{door}},
			steps: []step{{objs: []Object{at(1, 300, 150), at(1, 300, 300)}}, {objs: []Object{at(1, 300, 300), at(1, 300, 150)}}},
			want:  []string{"f1 zone.enter table t1", "f1 line.cross door t1 in"},
		},
		{
			name:  "zone and line together, several tracks",
			cfg:   Config{Zones: []Zone{table}, Lines: []Line{door}},
			steps: merge(path(1, 300, 90, 300, 440, 8), path(2, 250, 460, 250, 110, 8)),
			want: []string{
				"f2 zone.enter table t2", "f3 line.cross door t1 in", "f4 zone.enter table t1",
				"f5 zone.leave table t2 dwell=300ms", "f6 line.cross door t2 out", "f7 zone.leave table t1 dwell=300ms",
			},
		},
	}
}

func TestCases(t *testing.T) {
	for _, c := range analyticsCases() {
		t.Run(c.name, func(t *testing.T) {
			got, a := run(t, c.cfg, c.steps, c.flush)
			if !equalLists(got, c.want) {
				t.Fatalf("\n got %q\nwant %q", got, c.want)
			}
			checkBalance(t, a, got, c.flush)
		})
	}
}
