package evidence

import (
	"errors"
	"github.com/vinfer/vinfer/sink"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
	var written, failed int // an event whose row the full disk refused is not found
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

// TestSmallFilesystemFullEndsItems indexes an event, then another program fills the disk (a
// real 4 MiB tmpfs) before its clip is complete: the clip cannot be written and nothing older
// can be deleted, and the index cannot record that either. The event's clip still ends gone
// with the reason, through the item lookup, the list and the file alike, never pending once
// the writer is done; the failure is counted; once the disk has room the record reaches the
// index and survives a restart.
func TestSmallFilesystemFullEndsItems(t *testing.T) {
	dir := testutil.SmallFS(t, 4<<20)
	units := readUnits(t, 20*time.Second)
	r := newRecorder(t, dir, func(r *Recorder) { r.Pre, r.Post, r.MinFree = 2*time.Second, 2*time.Second, 64<<10 })
	k := 0
	for k < len(units) && units[k].PTS < 6*time.Second {
		k++
	}
	feed(r, "s", units[:k], nil, 300*time.Millisecond)
	// many events in one clip, so that the clip's index record (their ids, ~30 KB) needs more
	// pages than the index file has free; each event is a row job: batches of fewer than the
	// writer's queue holds (256)
	var evs []event.Event
	for range 5 {
		var batch []event.Event
		for range 200 {
			batch = append(batch, ev("s", 5*time.Second))
		}
		r.Write(&sink.Result{Stream: "s", PTS: 5 * time.Second, Events: batch})
		synced(t, r) // the rows are in the index; the clip is still open
		evs = append(evs, batch...)
	}
	e := evs[0]
	fill(t, filepath.Join(dir, "filler"))
	feed(r, "s", units[k:], nil, 300*time.Millisecond)
	synced(t, r)
	it, err := r.EvidenceItem(e.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	list, _, err := r.EvidenceList(defs.EvidenceQuery{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := r.EvidenceStats()
	t.Logf("clip %s %q; failures %v", it.Clip.State, it.Clip.Reason, st.Failures)
	if it.Clip.State != "gone" || it.Clip.Reason == "" || it.HasClip {
		t.Errorf("clip %s %q: want gone for the full disk", it.Clip.State, it.Clip.Reason)
	}
	if len(list) != len(evs) {
		t.Errorf("%d events listed, want %d", len(list), len(evs))
	}
	for _, l := range list {
		if l.Clip.State != it.Clip.State || l.Clip.Reason != it.Clip.Reason {
			t.Fatalf("event %s listed with clip %s %q, want it as the item lookup gives it", l.ID, l.Clip.State, l.Clip.Reason)
		}
	}
	if st.Failures[FailDiskFull] != 1 || st.Failures[FailIndex] == 0 {
		t.Errorf("failures %v: want the clip counted disk_full and the refused index write counted", st.Failures)
	}
	// once the disk has room, the record reaches the index (at the latest at Close): after a
	// restart the clip still reads gone with its reason
	if err := os.Remove(filepath.Join(dir, "filler")); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	r = newRecorder(t, dir, nil)
	again, err := r.EvidenceItem(e.ID.String())
	if err != nil {
		t.Fatal(err)
	}
	if again.Clip.State != it.Clip.State || again.Clip.Reason != it.Clip.Reason {
		t.Errorf("after a restart: clip %s %q, want %s %q", again.Clip.State, again.Clip.Reason, it.Clip.State, it.Clip.Reason)
	}
	if _, err := r.EvidenceFile(e.ID.String(), defs.EvidenceClipFile); !errors.Is(err, defs.ErrEvidenceGone) || !strings.Contains(err.Error(), it.Clip.Reason) {
		t.Errorf("clip file: %v, want gone with the reason", err)
	}
}

// fill writes name until its file system is full.
func fill(t *testing.T, name string) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 4096)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			return
		}
	}
}

// TestQueueFullEndsItems stalls the writer on a clip file and fills its queue with the rows
// of one clip's events: that clip, complete, is dropped because the queue is full; once the
// writer catches up, every one of its events reads the clip gone with the reason, not pending.
func TestQueueFullEndsItems(t *testing.T) {
	units := readUnits(t, 10*time.Second)
	release := make(chan struct{})
	r := newRecorder(t, t.TempDir(), func(r *Recorder) {
		r.Pre, r.Post, r.NewDecoder = time.Second, 100*time.Millisecond, nil
		r.create = func(name string) (fileWriter, error) {
			select {
			case <-release:
			case <-time.After(2 * time.Minute):
			}
			return createFile(name)
		}
	})
	upto := func(pts time.Duration) int {
		k := 0
		for k < len(units) && units[k].PTS < pts {
			k++
		}
		return k
	}
	k0, k1 := upto(2*time.Second), upto(4*time.Second)
	feed(r, "s", units[:k0], []event.Event{ev("s", 500*time.Millisecond)}, 0)
	testutil.Eventually(t, time.Minute, "the writer stalled on the first clip", func() bool { return len(r.jobs) == 0 })
	var evs []event.Event // DefaultQueue rows: the queue is full
	for range DefaultQueue {
		evs = append(evs, ev("s", 3*time.Second))
	}
	r.Write(&sink.Result{Stream: "s", PTS: 3 * time.Second, Events: evs})
	feed(r, "s", units[k0:k1], nil, 0) // the clip of evs is complete: dropped
	close(release)
	// the queue may still be full when the sync job is sent: it is dropped then, and sent again
	testutil.Eventually(t, 2*time.Minute, "the writer caught up", func() bool {
		ch := make(chan struct{})
		r.enqueue(job{synced: ch}, "queue_full")
		select {
		case <-ch:
			return true
		case <-time.After(time.Second):
			return false
		}
	})
	st, _ := r.EvidenceStats()
	if st.Failures[FailQueue] != 1 {
		t.Fatalf("failures %v: want one clip dropped for a full queue", st.Failures)
	}
	for _, e := range evs {
		it, err := r.EvidenceItem(e.ID.String())
		if err != nil {
			t.Fatal(err)
		}
		if it.Clip.State != "gone" || it.Clip.Reason != why[FailQueue] {
			t.Fatalf("event %s: clip %s %q, want gone for the full queue", e.ID, it.Clip.State, it.Clip.Reason)
		}
	}
}
