package reslog

import (
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/sink"
)

// Defaults of Log.
const (
	DefaultBlock    = time.Second
	DefaultChunk    = 10 * time.Minute
	maxBlockRaw     = 256 << 10 // a block is closed once its raw frames reach this
	maxZonesTracked = 4096      // tracks whose zone membership a stream remembers
)

// Log is the per-frame results log of every stream under Dir (a sink.Sink: put it among the
// pipeline's sinks). Write encodes a frame into its stream's block in memory; a block is
// compressed and appended once it spans Block (or at the stream's end, or Close), so a crash
// loses at most the last Block of frames. Set the fields, then Init.
type Log struct {
	// Dir holds one folder per stream (created).
	Dir string
	// Streams, when set, selects the streams logged; nil: all.
	Streams func(id string) bool
	// Block is the span of frames one block holds (default 1 s); Chunk the span of one file
	// (default 10 min).
	Block, Chunk time.Duration
	// MaxAge removes chunks whose last frame is older (0: kept); MaxBytes bounds one stream's
	// chunks, the oldest going first (0: no bound).
	MaxAge   time.Duration
	MaxBytes int64
	// KeepFrom, when set, ties retention to the recording: chunks that end before the time it
	// returns for a stream (its oldest recorded video; zero: no bound) are removed.
	KeepFrom func(stream string) time.Time
	// Log receives write failures (default slog.Default()).
	Log *slog.Logger

	enc     *zstd.Encoder
	stop    chan struct{}
	stopped chan struct{}
	mu      sync.Mutex
	streams map[string]*streamLog
	closed  bool

	frames, blocks, bytes, torn, dropped, removed atomic.Int64
}

// Stats are the log's counters since Init.
type Stats struct {
	Frames  int64 // frames logged
	Blocks  int64 // blocks appended
	Bytes   int64 // bytes appended (headers and compressed payloads)
	Torn    int64 // torn chunk tails cut at open
	Dropped int64 // frames lost to write failures (disk full, …)
	Removed int64 // chunks removed by retention
}

// Stats returns the counters.
func (l *Log) Stats() Stats {
	return Stats{Frames: l.frames.Load(), Blocks: l.blocks.Load(), Bytes: l.bytes.Load(), Torn: l.torn.Load(),
		Dropped: l.dropped.Load(), Removed: l.removed.Load()}
}

// Init creates Dir and cuts the torn tail of each stream's newest chunk (a crash mid-append).
func (l *Log) Init() error {
	if l.Dir == "" {
		return errors.New("reslog: no dir")
	}
	if l.Block <= 0 {
		l.Block = DefaultBlock
	}
	if l.Chunk <= 0 {
		l.Chunk = DefaultChunk
	}
	if l.Log == nil {
		l.Log = slog.Default()
	}
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		return fmt.Errorf("reslog: %w", err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return err
	}
	l.enc, l.streams = enc, map[string]*streamLog{}
	l.stop, l.stopped = make(chan struct{}), make(chan struct{})
	ents, err := os.ReadDir(l.Dir)
	if err != nil {
		return fmt.Errorf("reslog: %w", err)
	}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		cs, err := chunks(filepath.Join(l.Dir, e.Name()))
		if err != nil || len(cs) == 0 {
			continue
		}
		cut, err := repair(cs[len(cs)-1].path)
		if err != nil {
			return fmt.Errorf("reslog: %s: %w", cs[len(cs)-1].path, err)
		}
		if cut {
			l.torn.Add(1)
			l.Log.Warn("results log: cut a torn tail (vinfer stopped mid-write)", "file", cs[len(cs)-1].path)
		}
	}
	go l.flusher()
	return nil
}

// flusher appends the blocks that have waited a Block (a stream that stopped or stalls sends
// no next frame to close its block).
func (l *Log) flusher() {
	defer close(l.stopped)
	t := time.NewTicker(l.Block)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			l.flushOlder(now.Add(-l.Block))
		}
	}
}

// flushOlder appends the blocks whose first frame was logged before t.
func (l *Log) flushOlder(t time.Time) {
	for _, s := range l.all() {
		s.mu.Lock()
		if s.e.n > 0 && s.opened.Before(t) {
			l.flush(s)
		}
		s.mu.Unlock()
	}
}

func (l *Log) all() []*streamLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	ss := make([]*streamLog, 0, len(l.streams))
	for _, s := range l.streams {
		ss = append(ss, s)
	}
	return ss
}

// streamLog is one stream's open block and chunk; Write calls for a stream come in order
// from one goroutine, mu guards against Close and Flush.
type streamLog struct {
	id     string
	dir    string
	mu     sync.Mutex
	e      *encoder
	f      *os.File
	start  time.Time // the open chunk's first frame
	zones  map[int64][]string
	frame  Frame     // reused
	opened time.Time // when the open block got its first frame (wall clock of this process)
	out    []byte
}

func (l *Log) stream(id string) *streamLog {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	s := l.streams[id]
	if s == nil {
		s = &streamLog{id: id, dir: filepath.Join(l.Dir, id), e: newEncoder(), zones: map[int64][]string{}}
		l.streams[id] = s
	}
	return s
}

// Write logs r's frame (sink.Sink). The stream id must be a valid one (config.Stream), as the
// pipeline's are: it names a folder.
func (l *Log) Write(r *sink.Result) error {
	if l.Streams != nil && !l.Streams(r.Stream) {
		return nil
	}
	if !validID(r.Stream) {
		return nil
	}
	s := l.stream(r.Stream)
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.track(r.Events)
	if r.End {
		l.flush(s)
		s.closeChunk()
		clear(s.zones)
		return nil
	}
	f := &s.frame
	f.Frame, f.PTS, f.Width, f.Height = r.Frame, r.PTS, r.Width, r.Height
	f.Wall = r.Wallclock
	if f.Wall.IsZero() {
		f.Wall = time.Now()
	}
	f.Objects = f.Objects[:0]
	for _, d := range r.Detections {
		o := Object{TrackID: d.TrackID, ClassID: d.ClassID, Label: d.Label, Score: d.Score, Box: d.Box}
		if d.TrackID != 0 {
			o.Zones = s.zones[d.TrackID]
		}
		f.Objects = append(f.Objects, o)
	}
	if s.e.n > 0 && (f.Wall.UnixMicro()-s.e.first >= l.Block.Microseconds() || len(s.e.buf) >= maxBlockRaw ||
		f.Wall.UnixMicro() < s.e.last) {
		l.flush(s)
	}
	if s.e.n == 0 {
		s.opened = time.Now()
	}
	s.e.add(f)
	l.frames.Add(1)
	return nil
}

// track keeps the zone membership of the stream's tracks from the frame's events.
func (s *streamLog) track(evs []event.Event) {
	for i := range evs {
		ev := &evs[i]
		switch ev.Type {
		case event.ZoneEnter:
			if len(s.zones) >= maxZonesTracked && s.zones[ev.TrackID] == nil {
				continue
			}
			zs := s.zones[ev.TrackID]
			if !contains(zs, ev.Zone) {
				s.zones[ev.TrackID] = append(zs[:len(zs):len(zs)], ev.Zone)
			}
		case event.ZoneLeave:
			zs := s.zones[ev.TrackID]
			out := make([]string, 0, len(zs))
			for _, z := range zs {
				if z != ev.Zone {
					out = append(out, z)
				}
			}
			if len(out) == 0 {
				delete(s.zones, ev.TrackID)
			} else {
				s.zones[ev.TrackID] = out
			}
		case event.TrackEnd:
			delete(s.zones, ev.TrackID)
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// flush compresses s's block and appends it to its chunk (opening or rotating the chunk); a
// failed write drops the block (counted) and leaves the file as it was.
func (l *Log) flush(s *streamLog) {
	e := s.e
	if e.n == 0 {
		return
	}
	defer e.reset()
	first := time.UnixMicro(e.first)
	if s.f != nil && first.Sub(s.start) >= l.Chunk {
		s.closeChunk()
		l.retain(s.id, s.dir)
	}
	if s.f == nil {
		if err := s.openChunk(first); err != nil {
			l.dropped.Add(int64(e.n))
			l.Log.Warn("results log: cannot open a chunk", "stream", s.id, "err", err)
			return
		}
	}
	raw := e.payload(nil)
	s.out = append(s.out[:0], make([]byte, headerLen)...)
	s.out = l.enc.EncodeAll(raw, s.out)
	p := s.out[headerLen:]
	h := blockHeader{n: uint32(len(p)), crc: crc32.Checksum(p, castagnoli), first: e.first, last: e.last}
	h.append(s.out[:0])
	fi, err := s.f.Stat()
	if err == nil {
		if _, err = s.f.Write(s.out); err != nil {
			_ = s.f.Truncate(fi.Size()) // no partial block stays behind
			_, _ = s.f.Seek(fi.Size(), 0)
		}
	}
	if err != nil {
		l.dropped.Add(int64(e.n))
		l.Log.Warn("results log: write failed, block dropped", "stream", s.id, "frames", e.n, "err", err)
		return
	}
	l.blocks.Add(1)
	l.bytes.Add(int64(len(s.out)))
}

func (s *streamLog) openChunk(first time.Time) error {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(s.dir, chunkName(first))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) { // same µs as an older chunk (a clock step): the next free
		for i := int64(1); i < 1000 && errors.Is(err, os.ErrExist); i++ {
			path = filepath.Join(s.dir, chunkName(first.Add(time.Duration(i)*time.Microsecond)))
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		}
	}
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte(magic)); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	s.f, s.start = f, first
	return nil
}

func (s *streamLog) closeChunk() {
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// Flush appends every stream's open block (tests, shutdown).
func (l *Log) Flush() {
	for _, s := range l.all() {
		s.mu.Lock()
		l.flush(s)
		s.mu.Unlock()
	}
}

// Close flushes every stream's block and closes the files; later Writes are ignored.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.stopped
	l.mu.Lock()
	ss := make([]*streamLog, 0, len(l.streams))
	for _, s := range l.streams {
		ss = append(ss, s)
	}
	l.mu.Unlock()
	for _, s := range ss {
		s.mu.Lock()
		l.flush(s)
		s.closeChunk()
		s.mu.Unlock()
	}
	return nil // the encoder stays: a Write may still hold its stream (EncodeAll keeps no goroutine)
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
