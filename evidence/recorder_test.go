package evidence

import (
	"errors"
	"image/jpeg"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/sink"
)

// clipOf waits for the clip of event id and returns its index entry.
func clipOf(t *testing.T, r *Recorder, id event.ID) defs.EvidenceItem {
	t.Helper()
	var it defs.EvidenceItem
	testutil.Eventually(t, 30*time.Second, "clip of "+id.String()+" indexed", func() bool {
		var err error
		it, err = r.EvidenceItem(id.String())
		return err == nil && it.Clip != nil && it.Clip.State != "pending"
	})
	return it
}

// TestClipAroundEvent records the README's line crossing at 19.1 s of the bundled sample:
// the clip runs from the key frame at or before 9.1 s to 24.1 s, ffprobe reads it with that
// duration within one GOP (1 s), every frame decodes, and the snapshots are JPEGs.
func TestClipAroundEvent(t *testing.T) {
	units := readUnits(t, 30*time.Second)
	r := newRecorder(t, t.TempDir(), nil)
	e := ev("sample", 19100*time.Millisecond)
	feed(r, "sample", units, []event.Event{e}, 300*time.Millisecond)
	it := clipOf(t, r, e.ID)
	if !it.HasClip || !it.HasSnapshot || it.Clip.Truncated {
		t.Fatalf("item %+v clip %+v: want a clip and a snapshot, not truncated", it, it.Clip)
	}
	if it.Clip.Start != 9 || it.Clip.Want != 9.1 {
		t.Fatalf("clip starts at %v (asked %v), want the key frame at 9 s", it.Clip.Start, it.Clip.Want)
	}
	f, err := r.EvidenceFile(e.ID.String(), defs.EvidenceClipFile)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	dur, frames := probe(t, f.Name())
	want := 15 * time.Second // pre + post
	if dur < want-100*time.Millisecond || dur > want+time.Second {
		t.Fatalf("ffprobe duration %v, want %v to %v (one GOP more)", dur, want, want+time.Second)
	}
	if frames < 150 || frames > 162 {
		t.Fatalf("%d frames decoded, want 151 to 161 at 10 fps", frames)
	}
	decodes(t, f.Name())
	for _, k := range []defs.EvidenceFileKind{defs.EvidenceSnapshot, defs.EvidenceSnapshotBoxed} {
		s, err := r.EvidenceFile(e.ID.String(), k)
		if err != nil {
			t.Fatal(err)
		}
		img, err := jpeg.Decode(s)
		s.Close()
		if err != nil || img.Bounds().Dx() != 768 || img.Bounds().Dy() != 432 {
			t.Fatalf("snapshot %d: %v %v", k, err, img)
		}
	}
	wantPath := filepath.Join(r.Dir, "sample", "2026-03-01", e.ID.String()+".mp4")
	if f.Name() != wantPath {
		t.Fatalf("clip at %s, want %s", f.Name(), wantPath)
	}
}

// TestOverlappingEventsShareClip: a second event within the first one's post time extends its
// clip; both rows point at one file, which runs to the second event + post.
func TestOverlappingEventsShareClip(t *testing.T) {
	units := readUnits(t, 40*time.Second)
	r := newRecorder(t, t.TempDir(), func(r *Recorder) { r.Pre, r.Post, r.NewDecoder = 2*time.Second, 2*time.Second, nil })
	a, b, c := ev("s", 10*time.Second), ev("s", 11500*time.Millisecond), ev("s", 30*time.Second)
	feed(r, "s", units, []event.Event{a, b, c}, 200*time.Millisecond)
	ia, ib, ic := clipOf(t, r, a.ID), clipOf(t, r, b.ID), clipOf(t, r, c.ID)
	if ia.Clip.ID != a.ID.String() || ib.Clip.ID != a.ID.String() || ic.Clip.ID != c.ID.String() {
		t.Fatalf("clips %s %s %s: want a's for a and b, c's own", ia.Clip.ID, ib.Clip.ID, ic.Clip.ID)
	}
	if len(ia.Clip.Events) != 2 || ia.Clip.Start != 8 || ia.Clip.End < 13.5 || ia.Clip.End > 14.6 {
		t.Fatalf("shared clip %+v: want events a, b from 8 s to 13.5 s", ia.Clip)
	}
	f, _ := r.EvidenceFile(a.ID.String(), defs.EvidenceClipFile)
	f.Close()
	if dur, _ := probe(t, f.Name()); dur < 5500*time.Millisecond || dur > 6600*time.Millisecond {
		t.Fatalf("shared clip lasts %v, want 8 s → 13.5 s", dur)
	}
}

// TestEventBeforeKeyFrame: a stream joined mid-GOP has no key frame before the event: the clip
// starts at the next key frame and says so.
func TestEventBeforeKeyFrame(t *testing.T) {
	units := readUnits(t, 8*time.Second)[4:] // from 0.4 s: the first key frame is at 1 s
	r := newRecorder(t, t.TempDir(), func(r *Recorder) { r.Post = 2 * time.Second; r.NewDecoder = nil })
	e := ev("s", 500*time.Millisecond)
	feed(r, "s", units, []event.Event{e}, 0)
	it := clipOf(t, r, e.ID)
	if !it.HasClip || !it.Clip.Truncated || it.Clip.Start != 1 {
		t.Fatalf("clip %+v: want one from the key frame at 1 s, truncated", it.Clip)
	}
	f, _ := r.EvidenceFile(e.ID.String(), defs.EvidenceClipFile)
	f.Close()
	decodes(t, f.Name())
}

// TestRetentionSizeCap: with room for two clips per stream, the third and fourth delete the
// oldest; their rows stay and say why the file is gone; the API answers with the reason.
func TestRetentionSizeCap(t *testing.T) {
	units := readUnits(t, 60*time.Second)
	r := newRecorder(t, t.TempDir(), func(r *Recorder) {
		r.Pre, r.Post, r.NewDecoder = time.Second, time.Second, nil
		r.MaxBytesPerStream = 200 << 10 // a 3 s clip of the sample is about 65 KB (+64 KiB of margin)
	})
	var evs []event.Event
	for _, s := range []int{10, 20, 30, 40, 50} {
		evs = append(evs, ev("s", time.Duration(s)*time.Second))
	}
	feed(r, "s", units, evs, 0)
	for _, e := range evs {
		clipOf(t, r, e.ID)
	}
	st, _ := r.EvidenceStats()
	if st.Streams[0].StoredBytes > 200<<10 || st.Deleted[ReasonStreamCap] == 0 {
		t.Fatalf("stored %d bytes, deleted %v: want ≤ 200 KiB and deletions by max_bytes_per_stream", st.Streams[0].StoredBytes, st.Deleted)
	}
	first, last := clipOf(t, r, evs[0].ID), clipOf(t, r, evs[4].ID)
	if first.HasClip || first.Clip.State != "gone" || first.Clip.Reason != why[ReasonStreamCap] || !last.HasClip {
		t.Fatalf("oldest %+v newest %+v: want the oldest gone by retention, the newest kept", first.Clip, last.Clip)
	}
	_, err := r.EvidenceFile(evs[0].ID.String(), defs.EvidenceClipFile)
	if !errors.Is(err, defs.ErrEvidenceGone) {
		t.Fatalf("expired clip: %v, want ErrEvidenceGone", err)
	}
	t.Logf("expired clip: %v", err)
}

// TestRestartReconciles: after a restart, a clip removed by hand is marked gone, a file no row
// names and a temporary file are removed, the rest is listed as before.
func TestRestartReconciles(t *testing.T) {
	dir := t.TempDir()
	units := readUnits(t, 30*time.Second)
	r := newRecorder(t, dir, func(r *Recorder) { r.Pre, r.Post, r.NewDecoder = time.Second, time.Second, nil })
	a, b := ev("s", 10*time.Second), ev("s", 20*time.Second)
	feed(r, "s", units, []event.Event{a, b}, 0)
	clipOf(t, r, a.ID)
	clipOf(t, r, b.ID)
	fa, _ := r.EvidenceFile(a.ID.String(), defs.EvidenceClipFile)
	fa.Close()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(fa.Name()) // by hand
	day := filepath.Dir(fa.Name())
	orphan := filepath.Join(day, gen.New(time.Now()).String()+".mp4") // crash after rename
	tmp := filepath.Join(day, gen.New(time.Now()).String()+".mp4.tmp")
	os.WriteFile(orphan, []byte("x"), 0o644)
	os.WriteFile(tmp, []byte("x"), 0o644)

	r2 := newRecorder(t, dir, func(r *Recorder) { r.NewDecoder = nil })
	ia, ib := clipOf(t, r2, a.ID), clipOf(t, r2, b.ID)
	if ia.HasClip || ia.Clip.Reason != why[ReasonMissing] || !ib.HasClip {
		t.Fatalf("after restart a %+v b %+v: want a gone (missing), b kept", ia.Clip, ib.Clip)
	}
	for _, p := range []string{orphan, tmp} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatalf("%s still there after the restart (%v)", p, err)
		}
	}
	st, _ := r2.EvidenceStats()
	if st.Deleted[ReasonMissing] != 1 || st.Deleted[ReasonOrphan] != 1 {
		t.Fatalf("deleted %v: want 1 missing and 1 orphan", st.Deleted)
	}
	items, next, err := r2.EvidenceList(defs.EvidenceQuery{Stream: "s", Limit: 1})
	if err != nil || len(items) != 1 || items[0].ID != b.ID.String() || next == "" {
		t.Fatalf("page 1: %v %q %v", items, next, err)
	}
	items, next, err = r2.EvidenceList(defs.EvidenceQuery{Stream: "s", Limit: 1, Cursor: next})
	if err != nil || len(items) != 1 || items[0].ID != a.ID.String() || next != "" {
		t.Fatalf("page 2: %v %q %v", items, next, err)
	}
}

func TestUnwritableDir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	r := &Recorder{Dir: filepath.Join(f, "evidence")} // below a file: root cannot create it either
	err := r.Init()
	if !errors.Is(err, ErrUnwritable) {
		t.Fatalf("Init: %v, want ErrUnwritable", err)
	}
	t.Log(err)
}

// failingFile fails every write after n bytes with ENOSPC, as a full disk does.
type failingFile struct {
	f *os.File
	n int
}

func (w *failingFile) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, syscall.ENOSPC
	}
	w.n -= len(p)
	return w.f.Write(p)
}
func (w *failingFile) Sync() error  { return w.f.Sync() }
func (w *failingFile) Close() error { return w.f.Close() }

// TestDiskFull: write errors and disk pressure are counted, leave no file behind, never block
// or fail Write, and the next clip is written once there is room again.
func TestDiskFull(t *testing.T) {
	units := readUnits(t, 50*time.Second)
	var full atomic.Bool
	var free atomic.Int64
	full.Store(true)
	free.Store(1 << 40)
	r := newRecorder(t, t.TempDir(), func(r *Recorder) {
		r.Pre, r.Post, r.NewDecoder = time.Second, time.Second, nil
		r.MinFree = 1 << 30
		r.create = func(name string) (fileWriter, error) {
			f, err := createFile(name)
			if err != nil || !full.Load() {
				return f, err
			}
			return &failingFile{f: f.(*os.File), n: 10 << 10}, nil
		}
		r.statfs = func(string) (int64, error) { return free.Load(), nil }
	})
	a := ev("s", 10*time.Second)
	feed(r, "s", units[:150], []event.Event{a}, 0)
	ia := clipOf(t, r, a.ID)
	if ia.HasClip || ia.Clip.State != "gone" {
		t.Fatalf("clip on a full disk: %+v", ia.Clip)
	}
	full.Store(false)
	free.Store(1 << 20)
	b := ev("s", 20*time.Second)
	feed(r, "s", units[150:250], []event.Event{b}, 0)
	ib := clipOf(t, r, b.ID)
	if ib.HasClip || ib.Clip.Reason != why[FailDiskFull] {
		t.Fatalf("clip below min_free: %+v", ib.Clip)
	}
	free.Store(1 << 40)
	c := ev("s", 35*time.Second)
	feed(r, "s", units[250:], []event.Event{c}, 0)
	if ic := clipOf(t, r, c.ID); !ic.HasClip {
		t.Fatalf("clip with room again: %+v", ic.Clip)
	}
	var st defs.EvidenceStats
	testutil.Eventually(t, 10*time.Second, "the third clip counted", func() bool { // counted after its index commit
		st, _ = r.EvidenceStats()
		return st.Clips == 1
	})
	if st.Failures[FailWrite] != 1 || st.Failures[FailDiskFull] != 1 || st.Clips != 1 {
		t.Fatalf("failures %v clips %d: want 1 write, 1 disk_full, 1 clip", st.Failures, st.Clips)
	}
	matches, _ := filepath.Glob(filepath.Join(r.Dir, "s", "*", "*"))
	if len(matches) != 1 {
		t.Fatalf("files %v: want only the third clip", matches)
	}
}

func TestWriteIgnoresUnselected(t *testing.T) {
	r := newRecorder(t, t.TempDir(), func(r *Recorder) { r.Types = []event.Type{event.ZoneLoiter} })
	e := ev("s", time.Second)
	r.Write(&sink.Result{Stream: "s", Events: []event.Event{e}})
	bad := ev("../x", time.Second)
	bad.Type = event.ZoneLoiter
	r.Write(&sink.Result{Stream: "../x", Events: []event.Event{bad}})
	other := ev("s", time.Second)
	other.Type, other.Zone = event.ZoneLoiter, "door"
	r.Zones = []string{"table"}
	r.Write(&sink.Result{Stream: "s", Events: []event.Event{other}})
	r.Close()
	if st := r.Stats(); st.Recorded != 0 {
		t.Fatalf("recorded %d events, want none (type not selected, stream id not a folder name, zone not listed)", st.Recorded)
	}
}

// TestWriteMarksEvents: Write puts has_clip and the URLs on the events it records (also in the
// index's copy, as sinks send it) and has_clip false on those it leaves out; PublicURL makes
// the URLs absolute.
func TestWriteMarksEvents(t *testing.T) {
	r := newRecorder(t, t.TempDir(), func(r *Recorder) {
		r.Types, r.PublicURL = []event.Type{event.LineCross}, "http://vinfer.local:8080/"
	})
	cross, enter := ev("s", time.Second), ev("s", time.Second)
	enter.Type, enter.Zone = event.ZoneEnter, "table"
	res := &sink.Result{Stream: "s", Events: []event.Event{cross, enter}}
	r.Write(res)
	if e := res.Events[0].Evidence; e == nil || !e.Clip || !e.Snapshot || e.Base != "http://vinfer.local:8080" {
		t.Fatalf("recorded event's evidence %+v", e)
	}
	if e := res.Events[1].Evidence; e == nil || e.Clip || e.Snapshot {
		t.Fatalf("left-out event's evidence %+v", e)
	}
	want := `"has_clip":true,"has_snapshot":true,"clip_url":"http://vinfer.local:8080/api/evidence/` + cross.ID.String() + `/clip.mp4","snapshot_url":"http://vinfer.local:8080/api/evidence/` + cross.ID.String() + `/snapshot.jpg"}`
	if got := string(res.Events[0].AppendJSON(nil)); !strings.HasSuffix(got, want) {
		t.Fatalf("encoded %s\nwant it to end with %s", got, want)
	}
	if got := string(res.Events[1].AppendJSON(nil)); !strings.HasSuffix(got, `"zone":"table","has_clip":false,"has_snapshot":false}`) {
		t.Fatalf("left-out event encoded %s", got)
	}
	testutil.Eventually(t, 10*time.Second, "row indexed", func() bool {
		it, err := r.EvidenceItem(cross.ID.String())
		return err == nil && strings.HasSuffix(string(it.Event), want)
	})
}

// at is ev with its wall-clock time at wall and an id from g.
func at(g *event.Generator, stream string, pts time.Duration, wall time.Time) event.Event {
	e := ev(stream, pts)
	e.Time, e.ID = wall, g.New(wall)
	return e
}

// TestRetentionMaxAge: with max_age 1 h, a clip written 61 minutes ago goes with its row (a
// request for it says it expired), one written 31 minutes ago stays.
func TestRetentionMaxAge(t *testing.T) {
	units := readUnits(t, 40*time.Second)
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var clock atomic.Int64
	clock.Store(base.Add(5 * time.Second).UnixNano())
	r := newRecorder(t, t.TempDir(), func(r *Recorder) {
		r.Pre, r.Post, r.NewDecoder, r.MaxAge = time.Second, time.Second, nil, time.Hour
		r.Now = func() time.Time { return time.Unix(0, clock.Load()) }
	})
	g := event.NewGenerator([32]byte{9}) // ids at these times (the shared one has gone past them)
	a := at(g, "s", 10*time.Second, base)
	feed(r, "s", units[:150], []event.Event{a}, 0)
	clipOf(t, r, a.ID)
	clock.Store(base.Add(30*time.Minute + 5*time.Second).UnixNano())
	b := at(g, "s", 30*time.Second, base.Add(30*time.Minute))
	feed(r, "s", units[150:], []event.Event{b}, 0)
	clipOf(t, r, b.ID)
	fa, _ := r.EvidenceFile(a.ID.String(), defs.EvidenceClipFile)
	fa.Close()

	clock.Store(base.Add(61 * time.Minute).UnixNano())
	r.kick <- struct{}{} // what the minute's tick does
	var err error
	testutil.Eventually(t, 10*time.Second, "the old event expired", func() bool {
		_, err = r.EvidenceFile(a.ID.String(), defs.EvidenceClipFile)
		return errors.Is(err, defs.ErrEvidenceNotFound)
	})
	if _, serr := os.Stat(fa.Name()); !errors.Is(serr, os.ErrNotExist) || !strings.Contains(err.Error(), "max_age") {
		t.Fatalf("expired event: %v, want not found, expired by max_age", err)
	}
	t.Logf("expired event: %v", err)
	if ib := clipOf(t, r, b.ID); !ib.HasClip {
		t.Fatalf("the 31-minute-old clip: %+v, want it kept", ib.Clip)
	}
	if st := r.Stats(); st.Deleted[ReasonMaxAge] != 1 {
		t.Fatalf("deleted %v, want one for max_age", st.Deleted)
	}
}

// TestRetentionTotalCap: max_bytes bounds all streams together: a clip of one stream deletes
// the oldest clip of another, whose row says why.
func TestRetentionTotalCap(t *testing.T) {
	units := readUnits(t, 50*time.Second)
	r := newRecorder(t, t.TempDir(), func(r *Recorder) {
		r.Pre, r.Post, r.NewDecoder = time.Second, time.Second, nil
		r.MaxBytes = 200 << 10 // a 3 s clip of the sample is about 65 KB (+64 KiB of margin)
	})
	a1, a2 := ev("a", 10*time.Second), ev("a", 30*time.Second)
	feed(r, "a", units, []event.Event{a1, a2}, 0)
	clipOf(t, r, a2.ID)
	b1, b2 := ev("b", 20*time.Second), ev("b", 40*time.Second)
	feed(r, "b", units, []event.Event{b1, b2}, 0)
	clipOf(t, r, b2.ID)
	st, _ := r.EvidenceStats()
	ia1, ib2 := clipOf(t, r, a1.ID), clipOf(t, r, b2.ID)
	t.Logf("stored %d bytes, deleted %v", st.StoredBytes, st.Deleted)
	if st.StoredBytes > 200<<10 || st.Deleted[ReasonTotalCap] == 0 {
		t.Fatalf("stored %d bytes, deleted %v: want ≤ 200 KiB and deletions by max_bytes", st.StoredBytes, st.Deleted)
	}
	if ia1.HasClip || ia1.Clip.Reason != why[ReasonTotalCap] || !ib2.HasClip {
		t.Fatalf("stream a's oldest %+v, stream b's newest %+v: want a's deleted for max_bytes, b's kept", ia1.Clip, ib2.Clip)
	}
}

// TestClipsCoverEventWindows records five events (two of them overlapping) on a camera-like
// stream (2.5 Mbit/s, a key frame every 4.8 s, B-frames; about 1.5 MB per GOP) with pre 3 s,
// post 2 s and the default buffer, its results 0.3 s behind the source and 4 s behind (more
// than post): each kept clip, read back with ffprobe, starts at the key frame at or before its
// first event − pre and lasts through its last event + post (the union of its events'
// windows), at most one GOP more; the buffer grew past its first MiB and dropped nothing a
// clip wanted.
func TestClipsCoverEventWindows(t *testing.T) {
	const (
		pre, post = 3 * time.Second, 2 * time.Second
		gop       = 4800 * time.Millisecond
	)
	units := readUnitsOf(t, motorway(t), time.Hour)
	for _, lag := range []time.Duration{300 * time.Millisecond, 4 * time.Second} {
		t.Run(lag.String(), func(t *testing.T) {
			r := newRecorder(t, t.TempDir(), func(r *Recorder) { r.Pre, r.Post, r.NewDecoder = pre, post, nil })
			var evs []event.Event
			for _, ms := range []int{5500, 7000, 13000, 19000, 25500} {
				evs = append(evs, ev("cars", time.Duration(ms)*time.Millisecond))
			}
			feed(r, "cars", units, evs, lag)
			type clip struct {
				from, to time.Duration // the union of its events' windows
				item     defs.EvidenceItem
			}
			clips := map[string]*clip{}
			for _, e := range evs {
				it := clipOf(t, r, e.ID)
				c := clips[it.Clip.ID]
				if c == nil {
					c = &clip{from: e.PTS - pre, to: e.PTS + post, item: it}
					clips[it.Clip.ID] = c
				}
				c.from, c.to = min(c.from, e.PTS-pre), max(c.to, e.PTS+post)
			}
			if len(clips) != 4 {
				t.Errorf("%d clips, want 4 (the events at 5.5 s and 7 s share one)", len(clips))
			}
			for id, c := range clips {
				f, err := r.EvidenceFile(id, defs.EvidenceClipFile)
				if err != nil {
					t.Fatalf("clip %s: %v", id, err)
				}
				f.Close()
				dur, _ := probe(t, f.Name())
				start := time.Duration(c.item.Clip.Start * float64(time.Second))
				t.Logf("clip %s: want %v → %v; starts %v, lasts %v (ffprobe), truncated %v", id, c.from, c.to, start, dur, c.item.Clip.Truncated)
				if c.item.Clip.Truncated || start > c.from || start <= c.from-gop {
					t.Errorf("clip %s starts at %v (truncated %v), want the key frame at or before %v", id, start, c.item.Clip.Truncated, c.from)
				}
				if end := start + dur; end < c.to || dur > c.to-c.from+gop+100*time.Millisecond {
					t.Errorf("clip %s covers %v → %v (%v), want %v → %v, at most a GOP more", id, start, end, dur, c.from, c.to)
				}
			}
			st, _ := r.EvidenceStats()
			t.Logf("buffer: capacity %d bytes, %d overruns", st.Streams[0].BufferCapacity, st.Streams[0].BufferOverruns)
			if s := st.Streams[0]; s.BufferOverruns != 0 || s.BufferCapacity <= 1<<20 {
				t.Errorf("buffer: %d overruns, capacity %d bytes: want none and growth past 1 MiB", s.BufferOverruns, s.BufferCapacity)
			}
		})
	}
}
