package record

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
	"golang.org/x/sys/unix"

	"github.com/vinfer/vinfer/media"
)

// Defaults of Recorder.
const (
	DefaultSegment = time.Minute
	DefaultBuffer  = 32 << 20
	queuedGOPs     = 8 // GOPs a stream's writer may have waiting
)

// Recorder records the coded video of the streams given Observers (pipeline.AUObserver) into
// segments under Dir. Set the fields, then Init; Close when the streams have stopped.
type Recorder struct {
	// Dir holds one folder per stream (created; must be writable).
	Dir string
	// Segment is a segment's length: a new one starts at the first key frame this long after
	// the open one began (default 1 min), and at a codec or parameter-set change or a
	// discontinuity.
	Segment time.Duration
	// MaxAge removes segments that ended longer ago; MaxBytesPerStream and MaxBytes bound the
	// closed segments of one stream and of all, the oldest going first (0: no bound).
	MaxAge                      time.Duration
	MaxBytesPerStream, MaxBytes int64
	// MinFree keeps that much of the file system free, removing the oldest segments (0: the
	// smaller of 1 GiB and 5% of the file system).
	MinFree int64
	// Buffer bounds each stream's coded video waiting for its writer (default 32 MiB): a GOP
	// that does not fit is dropped, counted.
	Buffer int
	// OnSegment, when set, is called after a segment closes or retention removed some (the
	// results log's retention follows the oldest segment: Oldest).
	OnSegment func(stream string)
	// Log receives write failures (default slog.Default()).
	Log *slog.Logger

	mu         sync.Mutex
	streams    map[*streamRec]struct{}
	wg         sync.WaitGroup
	retMu      sync.Mutex
	lastGlobal time.Time // retMu: the last pass over every stream

	segments, fragments, bytes, dropped, repaired, removedTorn, retained, failed atomic.Int64
}

// Stats are the recorder's counters since Init.
type Stats struct {
	Segments  int64 // segments closed
	Fragments int64 // fragments (GOPs) written
	Bytes     int64 // bytes written
	Dropped   int64 // GOPs dropped: buffer full, writer behind, write failed (disk full)
	Repaired  int64 // segments cut by a crash, cut back to their whole fragments at Init
	Removed   int64 // segments cut by a crash without a whole fragment, removed at Init
	Retained  int64 // segments removed by retention (age, size, free space)
	Failed    int64 // write or open failures
}

// Stats returns the counters.
func (r *Recorder) Stats() Stats {
	return Stats{Segments: r.segments.Load(), Fragments: r.fragments.Load(), Bytes: r.bytes.Load(),
		Dropped: r.dropped.Load(), Repaired: r.repaired.Load(), Removed: r.removedTorn.Load(),
		Retained: r.retained.Load(), Failed: r.failed.Load()}
}

// Init creates Dir, checks it is writable, repairs the segments a crash left open (cut back
// to their whole fragments and closed, or removed) and applies retention.
func (r *Recorder) Init() error {
	if r.Dir == "" {
		return errors.New("record: no dir")
	}
	if r.Segment <= 0 {
		r.Segment = DefaultSegment
	}
	if r.Buffer <= 0 {
		r.Buffer = DefaultBuffer
	}
	if r.Log == nil {
		r.Log = slog.Default()
	}
	r.streams = map[*streamRec]struct{}{}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return fmt.Errorf("record: %w", err)
	}
	probe, err := os.CreateTemp(r.Dir, ".probe-*")
	if err != nil {
		return fmt.Errorf("record: %s is not writable: %w", r.Dir, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	ents, err := os.ReadDir(r.Dir)
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() || !validID(e.Name()) {
			continue
		}
		parts, _ := filepath.Glob(filepath.Join(r.Dir, e.Name(), "*"+partExt))
		for _, p := range parts {
			r.recover(p)
		}
	}
	r.retain("")
	return nil
}

// recover closes a segment a crash left open: cut back to its whole fragments and named by
// its start and its last write, or removed.
func (r *Recorder) recover(path string) {
	name := strings.TrimSuffix(filepath.Base(path), partExt)
	var ms int64
	if _, err := fmt.Sscanf(name, "%d", &ms); err != nil || len(name) != msWidth {
		return
	}
	good, err := repair(path)
	if err != nil || good == 0 {
		os.Remove(path)
		r.removedTorn.Add(1)
		r.Log.Warn("recording: removed a segment without a whole fragment (vinfer stopped mid-write)", "file", path)
		return
	}
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	start := time.UnixMilli(ms)
	end := fi.ModTime()
	if !end.After(start) {
		end = start.Add(time.Millisecond)
	}
	if err := os.Rename(path, filepath.Join(filepath.Dir(path), segName(start, end))); err == nil {
		r.repaired.Add(1)
		r.Log.Warn("recording: closed a segment cut by a crash at its last whole fragment", "file", path)
	}
}

// Observer returns the access-unit observer that records stream id (pipeline.AUObserver);
// its writer goroutine ends after EndOfStream. id must be a valid stream id (config.Stream).
func (r *Recorder) Observer(id string) *streamRec {
	s := &streamRec{r: r, id: id, dir: filepath.Join(r.Dir, id), ch: make(chan *gop, queuedGOPs)}
	if !validID(id) {
		s.closed = true
		close(s.ch)
		return s
	}
	r.mu.Lock()
	r.streams[s] = struct{}{}
	r.mu.Unlock()
	r.wg.Add(1)
	go s.write()
	return s
}

// Close ends the recording of every stream (closing their segments) and waits for the
// writers.
func (r *Recorder) Close() error {
	r.mu.Lock()
	ss := make([]*streamRec, 0, len(r.streams))
	for s := range r.streams {
		ss = append(ss, s)
	}
	r.mu.Unlock()
	for _, s := range ss {
		s.EndOfStream()
	}
	r.wg.Wait()
	return nil
}

// streamRec is one stream's recording: its observer side (the stream's goroutine) fills a GOP
// and hands it to the writer goroutine.
type streamRec struct {
	r       *Recorder
	id, dir string

	mu       sync.Mutex // observer side
	cur      *gop
	newSeg   bool
	lastPTS  time.Duration
	lastWall time.Time // the last unit's wall time
	seen     bool
	closed   bool
	ch       chan *gop
	queued   atomic.Int64

	omu  sync.Mutex
	open Seg // the segment being written (Open set); zero: none
}

// setOpen notes the segment being written (nil: none), for Segments.
func (s *streamRec) setOpen(seg *segment) {
	s.omu.Lock()
	defer s.omu.Unlock()
	if seg == nil {
		s.open = Seg{}
		return
	}
	s.open = Seg{Stream: s.id, Name: filepath.Base(seg.path), Start: seg.start, End: seg.end, Size: seg.size,
		Zero: seg.baseDTS, HasZero: true, Open: true}
}

// openSeg returns the segment being written, ok false when none has a fragment yet.
func (s *streamRec) openSeg() (Seg, bool) {
	s.omu.Lock()
	defer s.omu.Unlock()
	return s.open, s.open.Open && s.open.End.After(s.open.Start)
}

// ObserveAccessUnit copies au into the GOP being gathered (pipeline.AUObserver); a key frame
// hands the previous GOP to the writer. It never blocks: a GOP that does not fit the buffer or
// the writer's queue is dropped, counted.
func (s *streamRec) ObserveAccessUnit(au *media.AccessUnit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	wall := au.Wallclock
	if wall.IsZero() {
		wall = time.Now()
	}
	if s.seen && (au.Discontinuity || au.PTS+time.Second < s.lastPTS) {
		s.send(-1, s.lastWall)
		s.newSeg = true
	}
	s.seen, s.lastPTS, s.lastWall = true, au.PTS, wall
	if au.Key {
		s.send(au.DTS, wall)
		s.cur = &gop{codec: au.Codec, wall: wall, newSeg: s.newSeg}
		s.newSeg = false
	}
	g := s.cur
	if g == nil {
		return
	}
	if au.Codec != g.codec || g.bytes+len(au.Data) > s.r.Buffer/2 {
		s.cur = nil // too big a GOP for the buffer: dropped whole
		s.r.dropped.Add(1)
		return
	}
	g.units = append(g.units, unit{data: append([]byte(nil), au.Data...), pts: au.PTS, dts: au.DTS, key: au.Key})
	g.bytes += len(au.Data)
}

// send hands the gathered GOP to the writer: nextDTS is the next key frame's DTS (-1: none),
// end its wall time.
func (s *streamRec) send(nextDTS time.Duration, end time.Time) {
	g := s.cur
	s.cur = nil
	if g == nil || len(g.units) == 0 {
		return
	}
	g.nextDTS, g.endWall = nextDTS, end
	if s.queued.Load()+int64(g.bytes) > int64(s.r.Buffer) {
		s.r.dropped.Add(1)
		return
	}
	s.queued.Add(int64(g.bytes))
	select {
	case s.ch <- g:
	default:
		s.queued.Add(-int64(g.bytes))
		s.r.dropped.Add(1)
	}
}

// EndOfStream writes the last GOP and closes the segment (pipeline.AUObserver).
func (s *streamRec) EndOfStream() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.send(-1, s.lastWall)
	s.closed = true
	close(s.ch)
}

// write is the stream's writer goroutine.
func (s *streamRec) write() {
	r := s.r
	defer r.wg.Done()
	defer func() {
		r.mu.Lock()
		delete(r.streams, s)
		r.mu.Unlock()
	}()
	var seg *segment
	var scratch seekablebuffer.Buffer
	closeSeg := func() {
		if seg == nil {
			return
		}
		if _, err := seg.close(); err != nil {
			r.failed.Add(1)
			r.Log.Warn("recording: cannot close a segment", "stream", s.id, "err", err)
		} else if seg.seq > 0 {
			r.segments.Add(1)
		}
		seg = nil
		s.setOpen(nil)
		r.retain(s.id)
		if r.OnSegment != nil {
			r.OnSegment(s.id)
		}
	}
	defer closeSeg()
	for g := range s.ch {
		s.queued.Add(-int64(g.bytes))
		p := paramsOf(g.codec, g.units[0].data)
		if p.sps == nil && seg != nil && seg.params.codec == g.codec { // parameter sets out of band
			p = seg.params
		}
		if seg != nil && (g.newSeg || !p.equal(seg.params) || g.wall.Sub(seg.start) >= r.Segment) {
			closeSeg()
		}
		if seg == nil {
			var err error
			if seg, err = openSegment(s.dir, g.wall, p, g.units[0].dts); err != nil {
				seg = nil
				r.dropped.Add(1)
				r.failed.Add(1)
				r.Log.Warn("recording: cannot open a segment, GOP dropped", "stream", s.id, "err", err)
				if errors.Is(err, unix.ENOSPC) {
					r.retain(s.id)
				}
				continue
			}
		}
		before := seg.size
		if err := seg.fragment(g, &scratch); err != nil {
			r.dropped.Add(1)
			r.failed.Add(1)
			r.Log.Warn("recording: write failed, GOP dropped", "stream", s.id, "err", err)
			if errors.Is(err, unix.ENOSPC) {
				closeSeg() // what it has stays playable; retention makes room
			}
			continue
		}
		s.setOpen(seg)
		r.fragments.Add(1)
		r.bytes.Add(seg.size - before)
		if free, err := freeBytes(r.Dir); err == nil && free < r.minFree() {
			r.retain(s.id)
		}
	}
}

// validID reports whether id can name a folder (config.Stream's id rule).
func validID(id string) bool {
	if id == "" || len(id) > 64 || id == "." || id == ".." {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// freeBytes returns the bytes available to an unprivileged user on dir's file system.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}

// minFree is MinFree, or the smaller of 1 GiB and 5% of the file system.
func (r *Recorder) minFree() int64 {
	if r.MinFree > 0 {
		return r.MinFree
	}
	var st unix.Statfs_t
	if err := unix.Statfs(r.Dir, &st); err != nil {
		return 0
	}
	return min(1<<30, int64(st.Blocks)*int64(st.Bsize)/20)
}
