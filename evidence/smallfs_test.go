package evidence

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/testutil"
)

// everyFive returns line.cross events of stream s every 5 s from 5 s to 55 s.
func everyFive(s string) []event.Event {
	var evs []event.Event
	for sec := 5; sec <= 55; sec += 5 {
		evs = append(evs, ev(s, time.Duration(sec)*time.Second))
	}
	return evs
}

// TestDefaultMinFree: without min_free, the guard keeps 5% of a small file system free.
func TestDefaultMinFree(t *testing.T) {
	r := newRecorder(t, testutil.SmallFS(t, 4<<20), nil)
	if r.MinFree != (4<<20)/20 {
		t.Fatalf("default min_free on a 4 MiB file system: %d, want 5%%", r.MinFree)
	}
	if r := newRecorder(t, t.TempDir(), nil); r.MinFree <= 0 || r.MinFree > DefaultMinFree {
		t.Fatalf("default min_free %d, want 0 < it ≤ 1 GiB", r.MinFree)
	}
}

// TestSmallFilesystemMinFree records eleven clips with snapshots onto a real 2.5 MiB tmpfs with
// min_free 1 MiB: the free-space guard (statfs) deletes the oldest first, so no write ever hits
// ENOSPC, the file system keeps min_free, the newest clips are there and decode, and the
// deleted ones' rows say why.
func TestSmallFilesystemMinFree(t *testing.T) {
	dir := testutil.SmallFS(t, 5<<19)
	units := readUnits(t, 60*time.Second)
	r := newRecorder(t, dir, func(r *Recorder) { r.Pre, r.Post, r.MinFree = 2*time.Second, 2*time.Second, 1<<20 })
	evs := everyFive("s")
	feed(r, "s", units, evs, 300*time.Millisecond)
	for _, e := range evs {
		clipOf(t, r, e.ID)
	}
	var items []defs.EvidenceItem // now that every clip is written, and older ones deleted
	for _, e := range evs {
		it, err := r.EvidenceItem(e.ID.String())
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, it)
	}
	free, err := freeBytes(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := r.EvidenceStats()
	t.Logf("free %d bytes of 2.5 MiB (min_free 1 MiB); stored %d bytes in %d clips; deleted %v; failures %v",
		free, st.StoredBytes, st.Streams[0].StoredClips, st.Deleted, st.Failures)
	if free < r.MinFree {
		t.Errorf("free space %d fell below min_free %d", free, r.MinFree)
	}
	if st.Deleted[ReasonMinFree] == 0 || len(st.Failures) != 0 {
		t.Fatalf("deleted %v failures %v: want deletions for min_free and no failure", st.Deleted, st.Failures)
	}
	if first := items[0]; first.HasClip || first.Clip.Reason != why[ReasonMinFree] {
		t.Fatalf("oldest clip %+v: want gone for min_free", first.Clip)
	}
	last := items[len(items)-1]
	if !last.HasClip || !last.HasSnapshot {
		t.Fatalf("newest clip %+v: want it kept with its snapshot", last.Clip)
	}
	f, err := r.EvidenceFile(last.ID, defs.EvidenceClipFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	decodes(t, f.Name())
}

// TestSmallFilesystemFull fills a real 1 MiB tmpfs behind the free-space guard's back (statfs
// reports room, as when another program fills the disk between two checks): the writes that
// hit ENOSPC are counted, leave no partial or temporary file, and Write never fails or blocks.
func TestSmallFilesystemFull(t *testing.T) {
	dir := testutil.SmallFS(t, 1<<20)
	units := readUnits(t, 60*time.Second)
	r := newRecorder(t, dir, func(r *Recorder) {
		r.Pre, r.Post = 2*time.Second, 2*time.Second
		r.statfs = func(string) (int64, error) { return 1 << 40, nil }
	})
	evs := everyFive("s")
	feed(r, "s", units, evs, 300*time.Millisecond)
	synced(t, r)
	var written, failed int // a clip whose row the full disk refused stays pending: not written
	for _, e := range evs {
		if it, err := r.EvidenceItem(e.ID.String()); err == nil && it.HasClip {
			written++
		} else {
			failed++
		}
	}
	st, _ := r.EvidenceStats()
	t.Logf("%d clips written, %d not; failures %v", written, failed, st.Failures)
	if failed == 0 || st.Failures[FailWrite]+st.Failures[FailSnapshot]+st.Failures[FailIndex] == 0 {
		t.Fatalf("failures %v: want write failures counted on a full file system", st.Failures)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}
