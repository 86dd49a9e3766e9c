package evidence

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/sink"
)

// Defaults of Recorder's fields.
const (
	DefaultPre     = 10 * time.Second
	DefaultPost    = 5 * time.Second
	DefaultMaxClip = 60 * time.Second
	DefaultQueue   = 256
	// DefaultMaxEvents bounds the index's rows when MaxEvents is 0.
	DefaultMaxEvents = 1_000_000
	// DefaultMinFree is the most free space kept by default (MinFree 0); on a file system
	// smaller than 20 GiB, 5% of its size.
	DefaultMinFree = 1 << 30
)

// Errors of Init.
var (
	ErrNoDir      = errors.New("evidence: dir is required")
	ErrUnwritable = errors.New("evidence: folder is not writable")
	ErrNegative   = errors.New("evidence: negative setting")
)

// Decoder decodes a clip's access units for snapshots (package codec's Decoder).
type Decoder interface {
	Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error
	Flush(ctx context.Context, emit func(*frame.Frame) error) error
	Close() error
}

// Recorder keeps evidence of scene events: for each selected event a clip from each stream's
// Ring (Pre before the event, Post after; overlapping events of a stream share one clip), a
// snapshot of the event's frame, and a row in an index that survives restarts. Set the fields,
// Init, feed each stream's units through Ring(id) and the results through Write (a sink.Sink),
// Close at the end. Clips and snapshots are written by one goroutine of its own; Write and the
// rings never wait for the disk (a full queue drops the clip, counted).
type Recorder struct {
	// Dir holds the files (STREAM/YYYY-MM-DD/ID.mp4, ID.jpg, ID.boxes.jpg, ID.best.jpg,
	// ID.best.boxes.jpg) and index.db.
	Dir string
	// Pre and Post are the time kept before and after an event (default 10 s and 5 s).
	Pre, Post time.Duration
	// MaxClip bounds one clip: events extend an open clip only up to this length.
	MaxClip time.Duration
	// Types are the event types recorded; empty: all. Zones, Lines and Classes narrow it
	// further: an event is recorded when its zone (zone.*), line (line.cross) or label (or its
	// group, Event.Group) is listed; an empty list passes everything of its kind.
	Types                 []event.Type
	Zones, Lines, Classes []string
	// MaxBytesPerStream and MaxBytes cap the files of one stream and of all (0: no cap);
	// MaxAge removes older files and rows (0: keep); MinFree keeps this many bytes free on the
	// file system (0: the default, the smaller of DefaultMinFree and 5% of the file system, so
	// evidence never fills a disk). The oldest clips go first.
	MaxBytesPerStream, MaxBytes int64
	MaxAge                      time.Duration
	MinFree                     int64
	// RingBytes bounds each stream's buffer (default DefaultRingBytes).
	RingBytes int
	// MaxEvents bounds the index's rows (default DefaultMaxEvents).
	MaxEvents int
	// NewDecoder, when set, makes snapshots: the clip is decoded up to each event's frame and
	// its track's best frame (best.go).
	NewDecoder func(media.Codec) (Decoder, error)
	// PublicURL, when set (an origin such as "http://vinfer.local:8080"), makes the clip and
	// snapshot URLs on events absolute; empty: paths on the API that serves them.
	PublicURL string
	// Log receives failures and deletions (default: discarded).
	Log *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time

	// create opens a file for writing (tests inject faults).
	create func(name string) (fileWriter, error)
	// statfs returns the free bytes of the file system holding dir (tests inject pressure).
	statfs func(dir string) (int64, error)

	idx   *index
	types map[event.Type]bool
	// recordedEv and skippedEv are what Write puts on events (event.Evidence, shared).
	recordedEv, skippedEv *event.Evidence

	mu      sync.Mutex
	streams map[string]*streamRec

	qmu    sync.RWMutex // enqueue (read) against Close (write)
	jobs   chan job
	done   chan struct{}
	closed atomic.Bool
	store  *store
	kick   chan struct{}

	recorded, clips, snaps, clipBytes atomic.Int64
	failures, deleted                 counters
	unrec                             unrecorded // clips ended whose record the index refused
}

// counters count by reason.
type counters struct {
	mu sync.Mutex
	m  map[string]int64
}

func (c *counters) add(reason string, n int64) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[reason] += n
	c.mu.Unlock()
}

func (c *counters) snapshot() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// job is one piece of work for the writer: event rows, or a clip with its units.
type job struct {
	rows  []Row
	clip  *openClip
	units []Unit
	trunc bool
	rec   *streamRec
	// synced, when set, is closed once the jobs before it ran (tests wait on the writer).
	synced chan struct{}
}

// streamRec is one stream's ring, open clip and recent tracked detections.
type streamRec struct {
	id   string
	ring *Ring
	r    *Recorder
	// Guarded by ring.mu: the open clip, the observations obs[obsHead:] (best.go) and the
	// frame size of the latest result.
	open    *openClip
	obs     []obs
	obsHead int
	w, h    int
}

// openClip is a clip collecting units.
type openClip struct {
	id       event.ID
	stream   string
	from     time.Duration // first event − Pre
	end      time.Duration // last event + Post
	events   []clipEvent
	dayStamp time.Time
}

// clipEvent is what a clip keeps of an event: enough to snapshot it and its track's best frame.
type clipEvent struct {
	id    event.ID
	pts   time.Duration
	track int64
	score float32
	box   [4]float32
	best  obs // set by chooseBest when the clip completes
}

// Init checks the settings, creates and checks the folder (an unwritable one is an error
// here, not at the first event), opens the index, reconciles it with the files left by an
// earlier run (a crash, files removed by hand), applies retention and starts the writer.
func (r *Recorder) Init() error {
	if r.Dir == "" {
		return ErrNoDir
	}
	if r.Pre < 0 || r.Post < 0 || r.MaxClip < 0 || r.MaxBytes < 0 || r.MaxBytesPerStream < 0 ||
		r.MaxAge < 0 || r.MinFree < 0 || r.RingBytes < 0 || r.MaxEvents < 0 {
		return ErrNegative
	}
	if r.Pre == 0 {
		r.Pre = DefaultPre
	}
	if r.Post == 0 {
		r.Post = DefaultPost
	}
	if r.MaxClip == 0 {
		r.MaxClip = DefaultMaxClip
	}
	r.MaxClip = max(r.MaxClip, r.Pre+r.Post)
	if r.RingBytes == 0 {
		r.RingBytes = DefaultRingBytes
	}
	if r.MaxEvents == 0 {
		r.MaxEvents = DefaultMaxEvents
	}
	if r.Log == nil {
		r.Log = slog.New(slog.DiscardHandler)
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	if r.create == nil {
		r.create = createFile
	}
	if r.statfs == nil {
		r.statfs = freeBytes
	}
	r.PublicURL = strings.TrimRight(r.PublicURL, "/")
	r.recordedEv = &event.Evidence{Base: r.PublicURL, Clip: true, Snapshot: r.NewDecoder != nil}
	r.skippedEv = &event.Evidence{Base: r.PublicURL}
	if len(r.Types) > 0 {
		r.types = map[event.Type]bool{}
		for _, t := range r.Types {
			r.types[t] = true
		}
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnwritable, r.Dir, err)
	}
	if err := probeWritable(r.Dir); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnwritable, r.Dir, err)
	}
	if r.MinFree == 0 {
		r.MinFree = DefaultMinFree
		if size, err := fsSize(r.Dir); err == nil {
			r.MinFree = min(r.MinFree, size/20)
		}
	}
	t0 := time.Now()
	idx, built, err := openIndex(filepath.Join(r.Dir, "index.db"))
	if err != nil {
		return fmt.Errorf("evidence: %w", err)
	}
	if built > 0 {
		r.Log.Info("evidence: indexed an older store's events by stream and type", "events", built,
			"took", time.Since(t0).Round(time.Millisecond))
	}
	r.idx = idx
	r.streams = map[string]*streamRec{}
	r.store = &store{r: r}
	if err := r.store.reconcile(); err != nil {
		idx.close()
		return fmt.Errorf("evidence: %w", err)
	}
	r.jobs = make(chan job, DefaultQueue)
	r.done = make(chan struct{})
	r.kick = make(chan struct{}, 1)
	go r.writer()
	return nil
}

// probeWritable creates and removes a file in dir.
func probeWritable(dir string) error {
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// Ring returns the buffer of stream id, made on first use (pipeline.AUObserver).
func (r *Recorder) Ring(id string) *Ring { return r.stream(id).ring }

// known returns stream id's record, nil when it has none yet.
func (r *Recorder) known(id string) *streamRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.streams[id]
}

func (r *Recorder) stream(id string) *streamRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.streams[id]
	if s == nil {
		s = &streamRec{id: id, r: r, ring: &Ring{Pre: r.Pre + r.Post, Back: r.Pre, MaxBytes: r.RingBytes}}
		s.ring.onUnit, s.ring.onProcessed = s.onUnit, s.onProcessed
		r.streams[id] = s
	}
	return s
}

// Write records the result's selected events and remembers its tracked detections for the
// best-frame snapshots (sink.Sink); every result tells the stream's ring how far the pipeline
// got (Ring.Processed). It sets every event's Evidence (has_clip, the URLs), so it must run
// before the sinks that encode events (app puts it first). It never waits for the disk.
func (r *Recorder) Write(res *sink.Result) error {
	if r.closed.Load() || !validStream(res.Stream) {
		return nil
	}
	tracked := false
	for i := range res.Detections {
		tracked = tracked || res.Detections[i].TrackID > 0
	}
	if !tracked && len(res.Events) == 0 {
		if s := r.known(res.Stream); s != nil {
			s.ring.Processed(res.PTS)
		}
		return nil
	}
	s := r.stream(res.Stream)
	s.ring.Processed(res.PTS)
	if tracked {
		s.ring.mu.Lock()
		s.observe(res)
		s.ring.mu.Unlock()
	}
	for i := range res.Events {
		ev := &res.Events[i]
		if ev.Stream != res.Stream || !r.selected(ev) {
			ev.Evidence = r.skippedEv
			continue
		}
		ev.Evidence = r.recordedEv
		s.addEvent(ev)
	}
	return nil
}

// selected reports whether ev passes Types, Zones, Lines and Classes.
func (r *Recorder) selected(ev *event.Event) bool {
	if r.types != nil && !r.types[ev.Type] {
		return false
	}
	if len(r.Classes) > 0 && !slices.Contains(r.Classes, ev.Label) && (ev.Group == "" || !slices.Contains(r.Classes, ev.Group)) {
		return false
	}
	switch ev.Type {
	case event.LineCross:
		return len(r.Lines) == 0 || slices.Contains(r.Lines, ev.Line)
	case event.ZoneEnter, event.ZoneLeave, event.ZoneLoiter:
		return len(r.Zones) == 0 || slices.Contains(r.Zones, ev.Zone)
	}
	return true
}

// addEvent opens or extends the stream's clip and queues the event's row.
func (s *streamRec) addEvent(ev *event.Event) {
	r := s.r
	row := Row{ID: ev.ID, Stream: s.id, Type: ev.Type.String(), Time: ev.Time.UTC(), PTS: seconds(ev.PTS),
		Event: ev.AppendJSON(nil)}
	ce := clipEvent{id: ev.ID, pts: ev.PTS, track: ev.TrackID, score: ev.Score, box: ev.Box}
	ring := s.ring
	ring.mu.Lock()
	defer ring.mu.Unlock()
	c := s.open
	if c != nil && ev.PTS-r.Pre <= c.end && ev.PTS+r.Post-c.from <= r.MaxClip {
		c.end = max(c.end, ev.PTS+r.Post)
		if len(c.events) < 1000 {
			c.events = append(c.events, ce)
		}
	} else {
		if c != nil {
			s.complete()
		}
		c = &openClip{id: ev.ID, stream: s.id, from: ev.PTS - r.Pre, end: ev.PTS + r.Post,
			events: []clipEvent{ce}, dayStamp: ev.Time.UTC()}
		s.open = c
		ring.pinned, ring.pin = true, c.from
	}
	row.Clip = c.id
	r.enqueue(job{rows: []Row{row}}, "queue_full")
	if ring.ended || (len(ring.ents) > ring.head && s.past(ring.newest)) {
		s.complete()
	}
}

// past reports whether the open clip is over once the newest unit is at newest: the units reach
// its end and so do the results (an event of a later result could still extend it), or the
// results are Pre + Post behind (a stalled pipeline no longer holds it). Called with ring.mu held.
func (s *streamRec) past(newest time.Duration) bool {
	end, ring := s.open.end, s.ring
	return newest >= end && (!ring.hasDone || ring.done >= end || newest >= end+s.r.Pre+s.r.Post)
}

// onUnit completes the open clip once it is over (past), or at the stream's end (u nil).
// Called with ring.mu held.
func (s *streamRec) onUnit(_ *Ring, u *entry) {
	if s.open != nil && (u == nil || s.past(u.pts)) {
		s.complete()
	}
}

// onProcessed completes the open clip once the results reach its end. Called with ring.mu held.
func (s *streamRec) onProcessed(ring *Ring) {
	if s.open != nil && s.past(ring.newest) {
		s.complete()
	}
}

// complete copies the open clip's units and hands them to the writer. Called with ring.mu held.
func (s *streamRec) complete() {
	c := s.open
	s.open = nil
	s.ring.pinned = false
	units, trunc := s.ring.copyRange(c.from, c.end)
	if len(units) > 0 {
		s.chooseBest(c.events, units[0].PTS, c.end)
	}
	s.r.enqueue(job{clip: c, units: units, trunc: trunc, rec: s}, FailQueue)
}

// enqueue hands j to the writer, or counts it under reason when the queue is full.
func (r *Recorder) enqueue(j job, reason string) {
	r.qmu.RLock()
	defer r.qmu.RUnlock()
	if r.closed.Load() {
		return
	}
	select {
	case r.jobs <- j:
	default:
		if j.clip != nil {
			r.failures.add(reason, 1)
			r.Log.Warn("evidence: writer behind, clip dropped", "stream", j.clip.stream, "clip", j.clip.id.String())
			rec := r.clipRecord(j.clip)
			rec.Gone = why[reason]
			r.unrec.add(rec) // the writer records it: its events do not read pending forever
		} else {
			r.failures.add("index_"+reason, 1)
		}
	}
}

// Close completes the open clips with the units buffered, waits for the writer to finish and
// closes the index.
func (r *Recorder) Close() error {
	if r.idx == nil || r.closed.Load() {
		return nil
	}
	r.mu.Lock()
	recs := make([]*streamRec, 0, len(r.streams))
	for _, s := range r.streams {
		recs = append(recs, s)
	}
	r.mu.Unlock()
	for _, s := range recs {
		s.ring.mu.Lock()
		if s.open != nil {
			s.complete()
		}
		s.ring.mu.Unlock()
	}
	r.qmu.Lock()
	r.closed.Store(true)
	close(r.jobs)
	r.qmu.Unlock()
	<-r.done
	r.recordUnrecorded()
	return r.idx.close()
}

// writer runs the jobs in order, and retention every minute.
func (r *Recorder) writer() {
	defer close(r.done)
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case j, ok := <-r.jobs:
			if !ok {
				return
			}
			r.run(j)
		case <-tick.C:
			r.recordUnrecorded()
			r.store.expire()
		case <-r.kick:
			r.store.expire()
		}
	}
}

func (r *Recorder) run(j job) {
	if j.synced != nil {
		close(j.synced)
		return
	}
	if j.rows != nil {
		if err := r.idx.putRows(j.rows); err != nil {
			r.failures.add("index", 1)
			r.Log.Error("evidence: index", "err", err)
			return
		}
		r.recorded.Add(int64(len(j.rows)))
		return
	}
	r.writeClip(j)
}

// Stats returns the recorder's figures.
func (r *Recorder) Stats() (st struct {
	Recorded, Clips, Snapshots, ClipBytes int64
	Failures, Deleted                     map[string]int64
}) {
	st.Recorded, st.Clips, st.Snapshots, st.ClipBytes = r.recorded.Load(), r.clips.Load(), r.snaps.Load(), r.clipBytes.Load()
	st.Failures, st.Deleted = r.failures.snapshot(), r.deleted.snapshot()
	return st
}

// streamIDs lists the streams with a ring, sorted.
func (r *Recorder) streamIDs() []*streamRec {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*streamRec, 0, len(r.streams))
	for _, s := range r.streams {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *streamRec) int { return strings.Compare(a.id, b.id) })
	return out
}

// validStream reports a stream id usable as a folder name: [A-Za-z0-9._-], not "." or "..".
func validStream(s string) bool {
	if s == "" || s == "." || s == ".." || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
