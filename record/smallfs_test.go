package record_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/record"
)

// On a small file system the recording keeps going: the oldest segments make room (free
// space kept), a GOP that finds the disk full is dropped (counted) and what was written stays
// playable.
func TestSmallDiskKeepsRecording(t *testing.T) {
	units := readUnits(t, sample, 140*time.Second) // 3.2 MB
	dir := testutil.SmallFS(t, 1<<20)
	r := newRecorder(t, dir, func(r *record.Recorder) { r.Segment = 10 * time.Second })
	feed(t, r, r.Observer("cam1"), units)
	r.Close()
	st := r.Stats()
	if st.Retained == 0 {
		t.Errorf("no segment removed for room on a 1 MiB file system: %+v", st)
	}
	segs, _ := r.Segments("cam1", time.Time{}, time.Time{})
	if len(segs) == 0 {
		t.Fatal("no segment left")
	}
	last := segs[len(segs)-1]
	if end := units[len(units)-1].Wallclock; end.Sub(last.End) > 2*time.Second {
		t.Errorf("the newest segment ends at %v, the video at %v: recording stopped", last.End, end)
	}
	for _, s := range segs {
		decodes(t, filepath.Join(dir, "cam1", s.Name))
	}
	t.Logf("%+v; %d segments kept", st, len(segs))
}

// Retention by age and by size: segments that ended before MaxAge go, then the oldest beyond
// MaxBytesPerStream.
func TestRetentionAgeAndSize(t *testing.T) {
	units := readUnits(t, sample, 30*time.Second)
	dir := t.TempDir()
	r := newRecorder(t, dir, func(r *record.Recorder) { r.Segment = 5 * time.Second })
	feed(t, r, r.Observer("cam1"), units)
	r.Close()
	segs, _ := r.Segments("cam1", time.Time{}, time.Time{})
	var total int64
	for _, s := range segs {
		total += s.Size
	}
	// Size: a cap of half the bytes keeps the newest half.
	r2 := newRecorder(t, dir, func(r *record.Recorder) { r.MaxBytesPerStream = total / 2 })
	r2.Close()
	kept, _ := r2.Segments("cam1", time.Time{}, time.Time{})
	var size int64
	for _, s := range kept {
		size += s.Size
	}
	if size > total/2 || len(kept) == 0 || kept[len(kept)-1].Name != segs[len(segs)-1].Name {
		t.Errorf("a cap of %d bytes kept %d bytes in %d segments", total/2, size, len(kept))
	}
	// Age: the segments are from t0, ended long ago by MaxAge's clock.
	r3 := newRecorder(t, dir, func(r *record.Recorder) { r.MaxAge = time.Since(t0.Add(20 * time.Second)) })
	r3.Close()
	kept, _ = r3.Segments("cam1", time.Time{}, time.Time{})
	for _, s := range kept {
		if s.End.Before(t0.Add(20 * time.Second)) {
			t.Errorf("segment %s ended before the age bound", s.Name)
		}
	}
	if len(kept) == 0 {
		t.Error("every segment removed")
	}
}

// Oldest, which the results log's retention follows, is the start of the oldest video kept,
// and the time now once none is left.
func TestOldestFollowsRetention(t *testing.T) {
	units := readUnits(t, sample, 12*time.Second)
	dir := t.TempDir()
	r := newRecorder(t, dir, func(r *record.Recorder) { r.Segment = 5 * time.Second })
	feed(t, r, r.Observer("cam1"), units)
	r.Close()
	segs, _ := r.Segments("cam1", time.Time{}, time.Time{})
	if got := r.Oldest("cam1"); !got.Equal(segs[0].Start) {
		t.Errorf("oldest %v, want the first segment's start %v", got, segs[0].Start)
	}
	r2 := newRecorder(t, dir, func(r *record.Recorder) { r.MaxAge = time.Since(t0.Add(12*time.Second)) / 2 })
	r2.Close()
	if got := r2.Oldest("cam1"); time.Since(got) > time.Minute {
		t.Errorf("oldest %v with every segment gone, want now", got)
	}
}
