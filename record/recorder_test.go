package record_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/record"
)

// The video goes into segments of about Segment, each cut at a key frame, each a playable MP4
// holding its frames; together every frame fed, and an export of the whole range plays them
// all on one timeline.
func TestSegmentsPlayEveryFrame(t *testing.T) {
	units := readUnits(t, sample, 20*time.Second)
	dir := t.TempDir()
	r := newRecorder(t, dir, nil)
	o := r.Observer("cam1")
	feed(t, r, o, units)
	r.Close()
	segs, err := r.Segments("cam1", time.Time{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(segs) < 6 || len(segs) > 8 {
		t.Fatalf("%d segments for 20 s in 3 s segments, want about 7", len(segs))
	}
	total := 0
	for _, s := range segs {
		p := filepath.Join(dir, "cam1", s.Name)
		decodes(t, p)
		total += probe(t, p)
		if d := s.End.Sub(s.Start); d < 2*time.Second || d > 5*time.Second {
			t.Errorf("segment %s spans %v, want about 3 s", s.Name, d)
		}
	}
	if total != len(units) {
		t.Errorf("segments hold %d frames, %d fed", total, len(units))
	}
	exp := filepath.Join(t.TempDir(), "all.mp4")
	f, _ := os.Create(exp)
	if err := r.Export(f, "cam1", t0, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	decodes(t, exp)
	if n := probe(t, exp); n != len(units) {
		t.Errorf("the export holds %d frames, %d fed", n, len(units))
	}
	// A part of the range: the GOPs overlapping it.
	f, _ = os.Create(exp)
	if err := r.Export(f, "cam1", t0.Add(5*time.Second), t0.Add(7*time.Second)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	decodes(t, exp)
	if n := probe(t, exp); n < 20 || n > 40 {
		t.Errorf("the export of 2 s holds %d frames at 10 fps, want its GOPs' 20–40", n)
	}
	if err := r.Export(f, "cam1", t0, t0.Add(2*time.Hour)); err != record.ErrTooLong {
		t.Errorf("an export of 2 h: %v, want ErrTooLong", err)
	}
	if _, err := r.Open("cam1", "../../etc/passwd"); err != record.ErrNoSegment {
		t.Errorf("a segment name with a path: %v", err)
	}
	if _, err := r.Open("..", segs[0].Name); err != record.ErrNoStream {
		t.Errorf("a stream id with a path: %v", err)
	}
}

// A segment cut by a crash (vinfer killed while appending a fragment) is cut back at the next
// start to its whole fragments and still plays; one without a whole fragment is removed.
func TestCrashCutSegment(t *testing.T) {
	units := readUnits(t, sample, 10*time.Second)
	dir := t.TempDir()
	r := newRecorder(t, dir, func(r *record.Recorder) { r.Segment = time.Hour })
	o := r.Observer("cam1")
	feed(t, r, o, units)
	r.Close()
	segs, _ := r.Segments("cam1", time.Time{}, time.Time{})
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	whole, _ := os.ReadFile(filepath.Join(dir, "cam1", segs[0].Name))
	os.Remove(filepath.Join(dir, "cam1", segs[0].Name))
	// What the crash left: the file still open (.part), its last fragment half written.
	cut := whole[:len(whole)-len(whole)/20]
	os.WriteFile(filepath.Join(dir, "cam1", "001796522400000.part"), cut, 0o644)
	// And a segment just begun: its init section and part of its first fragment.
	os.WriteFile(filepath.Join(dir, "cam1", "001796522500000.part"), whole[:1200], 0o644)

	r2 := newRecorder(t, dir, nil)
	defer r2.Close()
	st := r2.Stats()
	if st.Repaired != 1 || st.Removed != 1 {
		t.Errorf("repaired %d, removed %d segments at start, want 1 and 1", st.Repaired, st.Removed)
	}
	segs, _ = r2.Segments("cam1", time.Time{}, time.Time{})
	if len(segs) != 1 {
		t.Fatalf("%d segments after the repair, want 1: %v", len(segs), segs)
	}
	p := filepath.Join(dir, "cam1", segs[0].Name)
	decodes(t, p)
	if n := probe(t, p); n < len(units)-20 || n >= len(units) {
		t.Errorf("the repaired segment plays %d frames, want all but its last GOP's of %d", n, len(units))
	}
	if parts, _ := filepath.Glob(filepath.Join(dir, "cam1", "*.part")); len(parts) != 0 {
		t.Errorf("open segments left: %v", parts)
	}
}
