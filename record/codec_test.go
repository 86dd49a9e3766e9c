package record_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/record"
)

// H.265 records as hvc1 segments that play; a file looping (its PTS going back) starts a new
// segment rather than a timeline running backwards, and every frame of both passes plays.
func TestH265AndLoop(t *testing.T) {
	units := readUnits(t, "videos/person-bicycle-car_hevc.mp4", 8*time.Second)
	if units[0].Codec != media.CodecH265 {
		t.Fatalf("codec %v, want H.265", units[0].Codec)
	}
	last := units[len(units)-1].Wallclock
	loop := make([]media.AccessUnit, 0, 2*len(units))
	loop = append(loop, units...)
	for _, u := range units { // the second pass: same PTS, later wall times
		u.Wallclock = last.Add(time.Second + u.Wallclock.Sub(t0))
		loop = append(loop, u)
	}
	dir := t.TempDir()
	r := newRecorder(t, dir, func(r *record.Recorder) { r.Segment = time.Hour })
	feed(t, r, r.Observer("cam1"), loop)
	r.Close()
	segs, _ := r.Segments("cam1", time.Time{}, time.Time{})
	if len(segs) != 2 {
		t.Fatalf("%d segments for two passes of a file, want 2", len(segs))
	}
	for _, s := range segs {
		p := filepath.Join(dir, "cam1", s.Name)
		decodes(t, p)
		if n := probe(t, p); n != len(units) {
			t.Errorf("segment %s plays %d frames, want %d", s.Name, n, len(units))
		}
	}
}
