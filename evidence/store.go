package evidence

import (
	"bufio"
	"fmt"
	"github.com/vinfer/vinfer/internal/atomicfile"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/vinfer/vinfer/event"
)

// Retention reasons (Stats Deleted keys) and failure reasons (Failures keys).
const (
	ReasonMaxAge    = "max_age"
	ReasonStreamCap = "max_bytes_per_stream"
	ReasonTotalCap  = "max_bytes"
	ReasonMinFree   = "min_free"
	ReasonMissing   = "missing"
	ReasonOrphan    = "orphan"

	FailQueue    = "queue_full"
	FailNoKey    = "no_keyframe"
	FailTooLarge = "too_large"
	FailDiskFull = "disk_full"
	FailWrite    = "write"
	FailIndex    = "index"
	FailSnapshot = "snapshot"
)

// why are the sentences the index keeps for a file that is gone.
var why = map[string]string{
	ReasonMaxAge:    "deleted by retention: older than max_age",
	ReasonStreamCap: "deleted by retention: the stream's files reached max_bytes_per_stream",
	ReasonTotalCap:  "deleted by retention: all files reached max_bytes",
	ReasonMinFree:   "deleted for disk space: free space fell below min_free",
	ReasonMissing:   "file missing: removed outside vinfer",
	FailQueue:       "not written: the writer was behind (its queue was full)",
	FailNoKey:       "not written: no key frame buffered before the clip's end",
	FailTooLarge:    "not written: larger than max_bytes_per_stream or max_bytes",
	FailDiskFull:    "not written: free space below min_free and nothing older to delete",
	FailWrite:       "not written: write error",
	FailIndex:       "not written: index error",
}

// fileWriter is a file being written.
type fileWriter = atomicfile.File

func createFile(name string) (fileWriter, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// freeBytes returns the bytes available to an unprivileged user on dir's file system.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// fsSize returns the size in bytes of dir's file system.
func fsSize(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Blocks) * int64(st.Bsize), nil
}

// store is the set of clips on disk with their sizes, oldest first; used by the writer only
// (and Init).
type store struct {
	r         *Recorder
	mu        sync.Mutex // the writer changes, Stats reads
	live      []*Clip
	perStream map[string]int64
	total     int64
}

// clipRel is the clip's path relative to Dir: STREAM/YYYY-MM-DD/ID.mp4 (day of the first
// event, UTC). stream is checked by validStream, id is a ULID: nothing else reaches a path.
func clipRel(stream string, day time.Time, id event.ID) string {
	return filepath.Join(stream, day.UTC().Format("2006-01-02"), id.String()+".mp4")
}

// Snapshot variants: an event's own frame (ID.jpg, ID.boxes.jpg with the box drawn) and its
// track's best frame (ID.best.jpg, ID.best.boxes.jpg).
const (
	snapFrame = iota
	snapFrameBoxed
	snapBest
	snapBestBoxed
	numSnaps
)

var snapSuffix = [numSnaps]string{".jpg", ".boxes.jpg", ".best.jpg", ".best.boxes.jpg"}

// snapRel is an event's snapshot of variant v (snapFrame…) beside its clip.
func snapRel(clipPath string, id event.ID, v int) string {
	return filepath.Join(filepath.Dir(clipPath), id.String()+snapSuffix[v])
}

// abs resolves a path from the index under Dir, refusing anything that is not of the layout.
func (r *Recorder) abs(rel string) (string, error) {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	if len(parts) != 3 || !validStream(parts[0]) || len(parts[1]) != 10 {
		return "", fmt.Errorf("bad path %q in the index", rel)
	}
	if _, err := time.Parse("2006-01-02", parts[1]); err != nil {
		return "", fmt.Errorf("bad path %q in the index", rel)
	}
	base, _, _ := strings.Cut(parts[2], ".")
	if _, err := event.ParseID(base); err != nil {
		return "", fmt.Errorf("bad path %q in the index", rel)
	}
	return filepath.Join(r.Dir, parts[0], parts[1], parts[2]), nil
}

func (s *store) add(c *Clip) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.perStream == nil {
		s.perStream = map[string]int64{}
	}
	s.live = append(s.live, c)
	s.perStream[c.Stream] += c.Bytes
	s.total += c.Bytes
}

// reconcile makes the index and the folder agree after a restart: temporary files of an
// interrupted write go, a clip whose file was removed is marked gone, and files no row
// names (a crash between the file's rename and the index's commit) are removed.
func (s *store) reconcile() error {
	r := s.r
	files := map[string]int64{}
	err := filepath.WalkDir(r.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(r.Dir, p)
		if strings.Count(filepath.ToSlash(rel), "/") != 2 { // index.db and strangers stay
			return nil
		}
		if strings.HasSuffix(p, ".tmp") {
			os.Remove(p)
			return nil
		}
		if info, err := d.Info(); err == nil {
			files[rel] = info.Size()
		}
		return nil
	})
	if err != nil {
		return err
	}
	clips, err := r.idx.clips()
	if err != nil {
		return err
	}
	var missing []*Clip
	for _, c := range clips {
		if c.Gone != "" {
			continue
		}
		size, ok := files[c.Path]
		if !ok {
			missing = append(missing, c)
			continue
		}
		delete(files, c.Path)
		for _, id := range c.Events {
			for v := range numSnaps {
				sp := snapRel(c.Path, id, v)
				if n, ok := files[sp]; ok {
					size += n
					delete(files, sp)
				}
			}
		}
		c.Bytes = size
		s.add(c)
	}
	if len(missing) > 0 {
		for _, c := range missing {
			r.Log.Warn("evidence: clip file missing, marked gone", "clip", c.ID.String(), "path", c.Path)
		}
		r.deleted.add(ReasonMissing, int64(len(missing)))
		if err := r.idx.markGone(missing, why[ReasonMissing]); err != nil {
			return err
		}
	}
	for rel := range files { // named by no clip of the index
		if err := os.Remove(filepath.Join(r.Dir, rel)); err == nil {
			r.deleted.add(ReasonOrphan, 1)
			r.Log.Warn("evidence: file not in the index removed", "path", rel)
		}
	}
	slices.SortFunc(s.live, func(a, b *Clip) int { return a.Created.Compare(b.Created) })
	s.expire()
	return nil
}

// remove deletes c's files and records why.
func (s *store) remove(c *Clip, reason string) {
	r := s.r
	if p, err := r.abs(c.Path); err == nil {
		os.Remove(p)
		for _, id := range c.Events {
			for _, suffix := range snapSuffix {
				os.Remove(filepath.Join(filepath.Dir(p), id.String()+suffix))
			}
		}
		os.Remove(filepath.Dir(p)) // the day's folder, when empty
	}
	s.mu.Lock()
	s.live = slices.DeleteFunc(s.live, func(x *Clip) bool { return x == c })
	s.perStream[c.Stream] -= c.Bytes
	s.total -= c.Bytes
	s.mu.Unlock()
	r.deleted.add(reason, 1)
	r.Log.Info("evidence: clip deleted", "clip", c.ID.String(), "stream", c.Stream, "reason", reason, "bytes", c.Bytes)
	if err := r.idx.markGone([]*Clip{c}, why[reason]); err != nil {
		r.Log.Error("evidence: index", "err", err)
	}
}

func (s *store) oldest(stream string) *Clip {
	for _, c := range s.live {
		if stream == "" || c.Stream == stream {
			return c
		}
	}
	return nil
}

// makeRoom deletes the oldest clips until need more bytes fit under the caps and above
// MinFree; it returns the failure reason when they cannot.
func (s *store) makeRoom(stream string, need int64) string {
	r := s.r
	if (r.MaxBytesPerStream > 0 && need > r.MaxBytesPerStream) || (r.MaxBytes > 0 && need > r.MaxBytes) {
		return FailTooLarge
	}
	for r.MaxBytesPerStream > 0 && s.perStream[stream]+need > r.MaxBytesPerStream {
		c := s.oldest(stream)
		if c == nil {
			return FailTooLarge
		}
		s.remove(c, ReasonStreamCap)
	}
	for r.MaxBytes > 0 && s.total+need > r.MaxBytes {
		c := s.oldest("")
		if c == nil {
			return FailTooLarge
		}
		s.remove(c, ReasonTotalCap)
	}
	if r.MinFree > 0 {
		for {
			free, err := r.statfs(r.Dir)
			if err != nil {
				r.Log.Warn("evidence: statfs", "err", err)
				break
			}
			if free-need >= r.MinFree {
				break
			}
			c := s.oldest("")
			if c == nil {
				r.Log.Warn("evidence: disk pressure, clip not written", "free", free, "min_free", r.MinFree, "need", need)
				return FailDiskFull
			}
			s.remove(c, ReasonMinFree)
		}
	}
	return ""
}

// expire applies age, the caps and the free-space floor to what is on disk, then drops the
// index rows older than MaxAge or beyond MaxEvents.
func (s *store) expire() {
	r := s.r
	now := r.Now()
	if r.MaxAge > 0 {
		for len(s.live) > 0 && now.Sub(s.live[0].Created) > r.MaxAge {
			s.remove(s.live[0], ReasonMaxAge)
		}
	}
	for st := range s.perStream {
		s.makeRoom(st, 0)
	}
	s.makeRoom("", 0)
	var before time.Time
	if r.MaxAge > 0 {
		before = now.Add(-r.MaxAge)
	}
	if n, err := r.idx.dropBefore(before, r.MaxEvents); err != nil {
		r.Log.Error("evidence: index", "err", err)
	} else if n > 0 {
		r.Log.Info("evidence: index rows expired", "rows", n)
	}
}

// writeFile writes a file through a temporary name, syncs it and renames it into place, so a
// crash leaves either the whole file or a .tmp that reconcile removes.
func (r *Recorder) writeFile(path string, write func(io.Writer) error) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return 0, err
	}
	create := func(name string) (atomicfile.File, error) { return r.create(name) }
	return atomicfile.Write(path, atomicfile.Options{Create: create}, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 256<<10)
		if err := write(bw); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// writeClip muxes a completed clip, writes its snapshots and indexes it.
func (r *Recorder) writeClip(j job) {
	c := j.clip
	rec := r.clipRecord(c)
	fail := func(reason string, err error) {
		r.failures.add(reason, 1)
		rec.Gone = why[reason]
		if err != nil {
			rec.Gone += ": " + err.Error()
		}
		r.Log.Warn("evidence: clip not written", "stream", c.stream, "clip", c.id.String(), "reason", rec.Gone)
		if err := r.idx.putClip(rec, nil); err != nil {
			r.unrecordable(rec, err)
		}
	}
	if len(j.units) == 0 {
		fail(FailNoKey, nil)
		return
	}
	units := j.units
	first, last := &units[0], &units[len(units)-1]
	rec.Start = seconds(first.PTS)
	rec.Truncated = j.trunc || first.PTS > c.from
	var need int64 = 64 << 10
	for i := range units {
		need += int64(len(units[i].Data))
	}
	if r.NewDecoder != nil {
		need += need / 8 // snapshots
	}
	if reason := r.store.makeRoom(c.stream, need); reason != "" {
		fail(reason, nil)
		return
	}
	rec.Path = clipRel(c.stream, c.dayStamp, c.id)
	path, err := r.abs(rec.Path)
	if err != nil {
		fail(FailWrite, err)
		return
	}
	var dur time.Duration
	n, err := r.writeFile(path, func(w io.Writer) error {
		var err error
		dur, err = WriteMP4(w, units)
		return err
	})
	if err != nil {
		rec.Path = ""
		fail(FailWrite, err)
		return
	}
	rec.Bytes = n
	rec.End = seconds(first.PTS + dur)
	if last.PTS > first.PTS+dur {
		rec.End = seconds(last.PTS)
	}
	snaps := map[event.ID]*snapInfo{}
	if r.NewDecoder != nil {
		shots, err := r.snapshots(units, c.events)
		if err != nil {
			r.failures.add(FailSnapshot, 1)
			r.Log.Warn("evidence: snapshot", "clip", c.id.String(), "err", err)
		}
		byID := map[event.ID]*clipEvent{}
		for i := range c.events {
			byID[c.events[i].id] = &c.events[i]
		}
		for _, sh := range shots {
			v := snapFrame
			if sh.best {
				v = snapBest
			}
			ok := true
			for k, b := range [][]byte{sh.clean, sh.boxed} {
				m, err := r.writeFile(filepath.Join(r.Dir, snapRel(rec.Path, sh.id, v+k)), func(w io.Writer) error {
					_, err := w.Write(b)
					return err
				})
				if err != nil {
					ok = false
					r.failures.add(FailSnapshot, 1)
					r.Log.Warn("evidence: snapshot", "event", sh.id.String(), "err", err)
					break
				}
				rec.Bytes += m
			}
			if !ok {
				continue
			}
			in := snaps[sh.id]
			if in == nil {
				in = &snapInfo{}
				snaps[sh.id] = in
			}
			if !sh.best {
				in.frame = true
			} else if e := byID[sh.id]; e != nil {
				b := e.best
				in.best = &Best{PTS: seconds(b.pts), Score: b.score, Box: b.box, Cut: b.cut}
			}
			r.snaps.Add(1)
		}
	}
	if err := r.idx.putClip(rec, snaps); err != nil {
		r.failures.add(FailIndex, 1)
		r.Log.Error("evidence: index", "err", err)
		s := &store{r: r, perStream: map[string]int64{}}
		s.live = []*Clip{rec}
		s.remove(rec, FailIndex) // no row names the files: they go
		gone := *rec
		gone.Path, gone.Bytes, gone.Gone = "", 0, why[FailIndex]+": "+err.Error()
		r.unrec.add(&gone) // remove's own record may have been refused too
		return
	}
	r.store.add(rec)
	r.clips.Add(1)
	r.clipBytes.Add(rec.Bytes)
	if r.store.overCaps() {
		r.store.expire()
	}
}

// overCaps reports the caps exceeded (the size estimate before writing was short).
func (s *store) overCaps() bool {
	r := s.r
	if r.MaxBytes > 0 && s.total > r.MaxBytes {
		return true
	}
	for _, n := range s.perStream {
		if r.MaxBytesPerStream > 0 && n > r.MaxBytesPerStream {
			return true
		}
	}
	return false
}

// storedBytes returns each stream's bytes and clips on disk.
func (r *Recorder) storedBytes() map[string][2]int64 {
	s := r.store
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][2]int64{}
	for _, c := range s.live {
		v := out[c.Stream]
		out[c.Stream] = [2]int64{v[0] + c.Bytes, v[1] + 1}
	}
	return out
}
