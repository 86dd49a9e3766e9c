package record_test

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/record"
)

// When something else fills the disk while a stream records, a segment whose first GOP finds
// no room is removed, not kept as an init section without a frame (listed, while retention
// removed older video for it): every segment listed holds video.
func TestFullDiskListsNoEmptySegment(t *testing.T) {
	units := readUnits(t, sample, 16*time.Second)
	half := 0
	for i := range units {
		if units[i].Key && units[i].PTS >= 6*time.Second {
			half = i
			break
		}
	}
	dir := testutil.SmallFS(t, 1<<20)
	r := newRecorder(t, dir, func(r *record.Recorder) { r.Segment, r.MinFree = 2*time.Second, 1 }) // room made on ENOSPC only
	feed(t, r, r.Observer("cam1"), units[:half])
	fill(t, filepath.Join(dir, "other"), 12<<10)
	feed(t, r, r.Observer("cam1"), units[half:])
	r.Close()
	if r.Stats().Dropped == 0 {
		t.Fatalf("no GOP dropped with 12 KiB free: %+v", r.Stats())
	}
	segs, _ := r.Segments("cam1", time.Time{}, time.Time{})
	for _, s := range segs {
		if n := probe(t, filepath.Join(dir, "cam1", s.Name)); n == 0 {
			t.Errorf("segment %s (%d bytes, %v) is listed without a frame", s.Name, s.Size, s.End.Sub(s.Start))
		}
	}
	t.Logf("%+v; %d segments listed", r.Stats(), len(segs))
}

// fill writes path until the file system is full, then frees keep bytes of it.
func fill(t *testing.T, path string, keep int64) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4<<10)
	var n int64
	for {
		k, err := f.Write(buf)
		n += int64(k)
		if errors.Is(err, syscall.ENOSPC) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(max(n-keep, 0)); err != nil {
		t.Fatal(err)
	}
}
