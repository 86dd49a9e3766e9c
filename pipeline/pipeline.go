// Package pipeline wires sources, decoders, preprocessing, batched inference and sinks into a
// running system, and bounds it: every stage is a goroutine joined to the next by a bounded
// queue, frames come from bounded pools, and when inference falls behind a live stream drops its
// oldest queued frame (counted) while a file stream waits. Each model has one scheduler that
// batches frames across all streams using it (up to MaxBatch, or whatever arrived within
// MaxDelay) and one inference worker locked to an OS thread.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/objects"
	"log/slog"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source"
)

// Models is what the pipeline needs of the model registry.
type Models interface {
	// Engine returns a model's engine, loading it on first use: for host frames when device is
	// −1, else for frames in the memory of that GPU (its runners must be FrameRunners). Each
	// (model, device) pair gets its own scheduler and inference worker.
	Engine(name string, device int) (Engine, error)
	// MaxDelay is how long a partial batch of the model waits for more frames (0: none).
	MaxDelay(name string) time.Duration
	// Cascades are the secondary models run on the model's detections (nil: none).
	Cascades(name string) []Cascade
}

// Observer sees every inference batch and every result, after the sinks (metrics). Its
// methods run on the pipeline's workers and output goroutine: they must not block.
type Observer interface {
	ObserveBatch(model string, size int)
	ObserveResult(r *sink.Result)
}

// Options configure a Pipeline.
type Options struct {
	// Models provides the engines (required).
	Models Models
	// Sinks receive every result, in per-stream order, from one goroutine.
	Sinks []sink.Sink
	// Observer, when set, sees every batch and result.
	Observer Observer
	// ResultBuffer is the number of results between the workers and the sinks (default 64).
	ResultBuffer int
	// KeepLatest retains each stream's latest decoded frame for snapshots.
	KeepLatest bool
	// Log receives pipeline events (warnings) and, at debug level, per-frame errors (default:
	// discarded).
	Log *slog.Logger
}

// Pipeline runs streams. Create with New, Start it, add streams; Stop drains and releases.
type Pipeline struct {
	opts       Options
	keepLatest bool

	ctx       context.Context
	cancel    context.CancelFunc
	workerCtx context.Context
	stopWork  context.CancelFunc

	mu      sync.Mutex
	streams map[string]*stream
	order   []string
	models  map[modelKey]*modelRunner
	// devLocks serialize the device cascades running a secondary model on a GPU (its lane 0).
	devLocks map[modelKey]*sync.Mutex
	wg       sync.WaitGroup

	results chan resultMsg
	free    chan *sink.Result
	outDone chan struct{}
	sinkErr error
}

// New returns a pipeline; call Start before adding streams.
func New(opts Options) *Pipeline {
	if opts.ResultBuffer <= 0 {
		opts.ResultBuffer = 64
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Pipeline{opts: opts, keepLatest: opts.KeepLatest,
		streams: map[string]*stream{}, models: map[modelKey]*modelRunner{}}
}

// Start begins the output stage. The pipeline runs until ctx ends or Stop.
func (p *Pipeline) Start(ctx context.Context) {
	p.ctx, p.cancel = context.WithCancel(ctx)
	p.workerCtx, p.stopWork = context.WithCancel(context.Background())
	p.results = make(chan resultMsg, p.opts.ResultBuffer)
	p.free = make(chan *sink.Result, p.opts.ResultBuffer+64)
	p.outDone = make(chan struct{})
	go p.output()
}

func (p *Pipeline) log(format string, args ...any) { p.opts.Log.Warn(fmt.Sprintf(format, args...)) }

func (p *Pipeline) debugf(format string, args ...any) {
	if p.opts.Log.Enabled(context.Background(), slog.LevelDebug) {
		p.opts.Log.Debug(fmt.Sprintf(format, args...))
	}
}

// AddStream starts a stream. Its model is loaded (once, shared) if it is not yet.
func (p *Pipeline) AddStream(cfg StreamConfig) error {
	if cfg.ID == "" {
		return errors.New("pipeline: stream id is empty")
	}
	if cfg.QueueDepth <= 0 {
		cfg.QueueDepth = 2
	}
	// Load the model (and its cascades) before taking the lock: a cold load must not block
	// other streams being added or removed. The engine provider is single-flight and cached.
	if p.opts.Models == nil {
		return errors.New("pipeline: no model provider")
	}
	if cfg.Source == nil || cfg.NewDecoder == nil {
		return errors.New("pipeline: stream needs a source and a decoder factory")
	}
	key := modelKey{name: cfg.Model, device: -1}
	if cfg.OnGPU() {
		key.device = cfg.Device
		if err := p.loadDeviceEngine(cfg.Model, cfg.Device); err != nil {
			return err
		}
	} else if err := p.loadEngines(cfg.Model, 0); err != nil {
		return err
	}
	if err := p.checkDetector(cfg.Model, key.device); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctx == nil || p.ctx.Err() != nil {
		return errors.New("pipeline: not running")
	}
	if _, ok := p.streams[cfg.ID]; ok {
		return fmt.Errorf("pipeline: %w: %q", ErrStreamExists, cfg.ID)
	}
	m, err := p.modelLocked(key)
	if err != nil {
		return err
	}
	var cpu *preprocess.CPU // the stream's own preprocessor, closed with it
	if cfg.Preprocessor == nil && !cfg.OnGPU() {
		cpu = &preprocess.CPU{Spec: m.spec, Workers: prepSplit()}
		if err := cpu.Init(); err != nil {
			return fmt.Errorf("model %s: %w", cfg.Model, err)
		}
		cfg.Preprocessor = cpu
	}
	rules, err := objects.Compile(cfg.Stream.Rules)
	if err != nil {
		return fmt.Errorf("stream %s: %w", cfg.ID, err)
	}
	sc, err := newScene(&cfg.Stream, rules)
	if err != nil {
		return fmt.Errorf("stream %s: %w", cfg.ID, err)
	}
	if sc != nil {
		sc.warn = p.log
		sc.reid = newReID(cfg.Tracker) // appearance re-identification (reid.go)
	}
	gate, err := newGate(&cfg.Stream, sc)
	if err != nil {
		return fmt.Errorf("stream %s: %w", cfg.ID, err)
	}
	st := &stream{gate: gate, watch: watchedClasses(&cfg.Stream), scene: sc, rules: rules, cfg: cfg, ownPre: cpu, stats: newStreamStats(), sched: m.sched, p: p, done: make(chan struct{}),
		torn:   make(chan struct{}),
		policy: cfg.Drop.Resolve(cfg.Source.Live()), idle: make(chan struct{}, 1)}
	st.stats.rules = rules
	st.q = newQueue(cfg.QueueDepth, m.sched.ready)
	st.q.background = !cfg.Source.Live()
	m.sched.add(st.q)
	var ctx context.Context
	ctx, st.cancel = context.WithCancel(p.ctx)
	p.streams[cfg.ID] = st
	p.order = append(p.order, cfg.ID)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		st.run(ctx)
		st.finish()
		close(st.torn)
	}()
	return nil
}

// finish tears a stream down after its loop ended: its queued frames still get inferred (the
// scheduler keeps its queue until empty), then the decoder and source are closed.
func (s *stream) finish() {
	for s.inflight.Load() > 0 {
		select {
		case <-s.idle:
		case <-s.p.workerCtx.Done():
			return
		}
	}
	if s.scene != nil {
		s.p.results <- resultMsg{r: s.p.getResult(), st: s, end: true}
	}
	s.sched.remove(s.q)
	for _, it := range s.q.close() {
		s.recycle(it)
	}
	s.releaseLatest()
	if err := s.closeDecoder(); err != nil {
		s.p.log("stream %s: %v", s.cfg.ID, err)
	}
	s.cfg.Source.Close()
	if s.ownPre != nil {
		s.ownPre.Close()
	}
}

// prepSplit is how many goroutines preprocess one host frame (preprocess.CPU.Workers): a
// quarter of GOMAXPROCS, at least 1. A model's frames are preprocessed at batch time, one
// goroutine per batch item, so on a large machine a batch of one would otherwise prepare
// frames on one core while inference waits; on a small one inference keeps its cores.
func prepSplit() int { return max(1, runtime.GOMAXPROCS(0)/4) }

func (p *Pipeline) loadEngines(name string, depth int) error {
	if _, err := p.opts.Models.Engine(name, -1); err != nil {
		return err
	}
	if depth < 4 {
		for _, c := range p.opts.Models.Cascades(name) {
			if err := p.loadEngines(c.Model, depth+1); err != nil {
				return fmt.Errorf("model %s: cascade: %w", name, err)
			}
		}
	}
	return nil
}

// loadDeviceEngine loads a model for the frames of GPU device, and its cascades' models there.
func (p *Pipeline) loadDeviceEngine(name string, device int) error {
	if _, err := p.opts.Models.Engine(name, device); err != nil {
		return err
	}
	for _, c := range p.opts.Models.Cascades(name) {
		if _, err := p.opts.Models.Engine(c.Model, device); err != nil {
			return fmt.Errorf("model %s: cascade: %w", name, err)
		}
	}
	return nil
}

// modelKey identifies a model's scheduler and worker: one per model for host frames
// (device −1), one per (model, GPU) for device frames.
type modelKey struct {
	name   string
	device int
}

func (k modelKey) String() string {
	if k.device < 0 {
		return k.name
	}
	return fmt.Sprintf("%s@cuda:%d", k.name, k.device)
}

func (p *Pipeline) modelLocked(key modelKey) (*modelRunner, error) {
	if m, ok := p.models[key]; ok {
		return m, nil
	}
	name := key.name
	eng, err := p.opts.Models.Engine(name, key.device)
	if err != nil {
		return nil, err
	}
	r := eng.Acquire()
	if r == nil {
		return nil, fmt.Errorf("model %s is closed", name)
	}
	spec, maxBatch := r.Preprocess(), r.MaxBatch()
	fr, frames := r.(FrameRunner)
	lanes, inflight := 0, 0
	if frames {
		lanes, inflight = fr.Lanes(), fr.InFlight()
	}
	r.Release()
	if key.device >= 0 && !frames {
		return nil, fmt.Errorf("pipeline: model %s for GPU frames: its runner does not take frames (FrameRunner)", key)
	}
	if _, ok := p.devLocks[key]; ok {
		return nil, fmt.Errorf("model %s: %w", key, ErrCascadeShared)
	}
	var devCascades []*devCascade
	if key.device >= 0 {
		for _, c := range p.opts.Models.Cascades(name) {
			if c.Model == name {
				return nil, fmt.Errorf("model %s: a cascade cannot run the model on its own detections", name)
			}
			dc, err := p.newDevCascade(c, key.device)
			if err != nil {
				return nil, fmt.Errorf("model %s: cascade: %w", name, err)
			}
			devCascades = append(devCascades, dc)
		}
	}
	m := &modelRunner{eng: eng, sched: newScheduler(maxBatch, p.opts.Models.MaxDelay(name)), spec: spec,
		slotLen: 3 * spec.Width * spec.Height, p: p, done: make(chan struct{}), devCascades: devCascades}
	p.models[key] = m
	if key.device >= 0 {
		m.startLanes(p.workerCtx, max(1, lanes), inflight)
	} else {
		go m.run(p.workerCtx)
	}
	if key.device < 0 {
		for _, c := range p.opts.Models.Cascades(name) {
			if c.Model == name {
				return nil, fmt.Errorf("model %s: a cascade cannot run the model on its own detections", name)
			}
			sec, err := p.modelLocked(modelKey{name: c.Model, device: -1})
			if err != nil {
				return nil, fmt.Errorf("model %s: cascade: %w", name, err)
			}
			cr, err := newCascadeRunner(c, sec)
			if err != nil {
				return nil, err
			}
			for _, nc := range sec.cascades {
				ncr, err := newCascadeRunner(nc.Cascade, nc.m)
				if err != nil {
					return nil, err
				}
				cr.nested = append(cr.nested, ncr)
			}
			m.cascades = append(m.cascades, cr)
		}
	}
	return m, nil
}

// RemoveStream stops a stream; its queued frames are dropped, its resources released.
func (p *Pipeline) RemoveStream(id string) error {
	p.mu.Lock()
	st, ok := p.streams[id]
	if ok {
		delete(p.streams, id)
		for i, x := range p.order {
			if x == id {
				p.order = append(p.order[:i], p.order[i+1:]...)
				break
			}
		}
	}
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("pipeline: no stream %q", id)
	}
	st.cancel()
	<-st.done
	return nil
}

// Wait blocks until every stream added so far has ended (files at their end) and their frames
// went through inference and the sinks.
func (p *Pipeline) Wait() { p.wg.Wait() }

// Stop stops all sources, lets frames already queued finish inference, flushes the sinks and
// releases every resource. It returns the first sink error.
func (p *Pipeline) Stop() error { return p.StopWithin(0) }

// StopWithin is Stop with the drain bounded: frames still queued drain after it began are
// dropped, counted as shutdown (the batches already running finish). drain <= 0: no bound.
func (p *Pipeline) StopWithin(drain time.Duration) error {
	p.cancel()
	p.waitStreams(drain)
	p.stopWork()
	p.mu.Lock()
	models := p.models
	p.mu.Unlock()
	for _, m := range models {
		<-m.done
	}
	close(p.results)
	<-p.outDone
	return p.sinkErr
}

// waitStreams waits for every stream's goroutine; past drain (> 0) it empties their queues.
func (p *Pipeline) waitStreams(drain time.Duration) {
	if drain <= 0 {
		p.wg.Wait()
		return
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	t := time.NewTimer(drain)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	p.mu.Lock()
	streams := make([]*stream, 0, len(p.streams))
	for _, st := range p.streams {
		streams = append(streams, st)
	}
	p.mu.Unlock()
	n := 0
	for _, st := range streams {
		for _, it := range st.q.close() {
			st.recycle(it)
			st.stats.Dropped[DropShutdown].Add(1)
			n++
		}
	}
	p.log("stopping: %d queued frame(s) not inferred within %s, dropped (shutdown)", n, drain)
	<-done
}

func (p *Pipeline) getResult() *sink.Result {
	select {
	case r := <-p.free:
		return r
	default:
		return &sink.Result{}
	}
}

func (p *Pipeline) observeBatch(model string, n int) {
	if p.opts.Observer != nil {
		p.opts.Observer.ObserveBatch(model, n)
	}
}

// output runs the sinks for every result, in each stream's order (inOrder).
func (p *Pipeline) output() {
	defer close(p.outDone)
	deliver := p.deliver
	for msg := range p.results {
		if msg.end { // after every result of the stream (sent once none was in flight)
			p.endScene(msg.st, msg.r)
			continue
		}
		inOrder(msg, deliver)
	}
}

// deliver runs the scene analyzer, the sinks and the observer on one result.
func (p *Pipeline) deliver(msg resultMsg) {
	r := msg.r
	if sc := msg.st.scene; sc != nil {
		sc.process(r)
	} else {
		r.Events = r.Events[:0]
	}
	if g := msg.st.gate; g != nil && hasObjects(r, msg.st.scene != nil, msg.st.watch) {
		seen(g, r, msg.st.scene != nil, msg.st.watch)
	}
	for _, s := range p.opts.Sinks {
		if err := s.Write(r); err != nil && p.sinkErr == nil {
			p.sinkErr = err
			p.log("sink: %v", err)
		}
	}
	st := msg.st.stats
	st.Detections.Add(int64(len(r.Detections)))
	st.LatencyNanos.Add(int64(r.Latency))
	for i := range r.Detections {
		st.countClass(r.Detections[i].Label)
	}
	if p.opts.Observer != nil {
		p.opts.Observer.ObserveResult(r)
	}
	select {
	case p.free <- r:
	default:
	}
}

// endScene sends a stream's closing scene events (zone.leave of tracks still inside, track.end)
// to the sinks, as a result without detections at the stream's last frame.
func (p *Pipeline) endScene(st *stream, r *sink.Result) {
	st.scene.end(r)
	if len(r.Events) > 0 {
		for _, s := range p.opts.Sinks {
			if err := s.Write(r); err != nil && p.sinkErr == nil {
				p.sinkErr = err
				p.log("sink: %v", err)
			}
		}
	}
	r.End = false // reused for frames
	select {
	case p.free <- r:
	default:
	}
}

// StreamStatus is a snapshot of one stream.
type StreamStatus struct {
	ID    string
	Model string
	// Decl is the stream as declared; Device the GPU of its frames (−1: host memory).
	Decl   config.Stream
	Device int
	Live   bool
	Ended  bool
	// Stopped: it ended because it was stopped, before its source's end.
	Stopped bool
	Err     error
	Queue   int
	Stats   *StreamStats
	Started time.Time
	// Scene is the stream's zone and line analyzer, nil with tracker: none.
	Scene *analytics.Analyzer
	// Source is the stream's source (type-assert for live statistics); Pool is its decoder's
	// frame pool, nil before the first frame or when the decoder has none.
	Source source.Source
	Pool   *frame.Pool
	// Activity is the stream's activity gate's snapshot, nil when gating is off.
	Activity *defs.Activity
}

// Streams returns a snapshot of the streams in the order they were added.
func (p *Pipeline) Streams() []StreamStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]StreamStatus, 0, len(p.order))
	for _, id := range p.order {
		st := p.streams[id]
		dev := -1
		if st.cfg.OnGPU() {
			dev = st.cfg.Device
		}
		var scene *analytics.Analyzer
		decl := st.cfg.Stream
		if st.scene != nil {
			scene = st.scene.analyzer
			decl.Config = scene.Set().Config() // zones and lines as changed at run time
		}
		var act *defs.Activity
		if st.gate != nil {
			a := st.gate.Snapshot(st.cfg.Activity.Mode.String())
			a.Parked = st.holdsNone.Load()
			act = &a
		}
		out = append(out, StreamStatus{Activity: act, Scene: scene, ID: id, Model: st.cfg.Model, Decl: decl, Device: dev, Live: st.cfg.Source.Live(),
			Ended: st.ended.Load(), Stopped: st.stopped.Load(), Err: st.err, Queue: st.q.len(), Stats: st.stats, Started: st.stats.started,
			Source: st.cfg.Source, Pool: st.pool.Load()})
	}
	return out
}

// Stream returns one stream's status.
func (p *Pipeline) Stream(id string) (StreamStatus, bool) {
	for _, s := range p.Streams() {
		if s.ID == id {
			return s, true
		}
	}
	return StreamStatus{}, false
}

// ModelNames lists the models loaded so far (once each, whatever devices they run on), sorted.
func (p *Pipeline) ModelNames() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for k := range p.models {
		if !slices.Contains(out, k.name) {
			out = append(out, k.name)
		}
	}
	sort.Strings(out)
	return out
}

// LatestFrame returns a stream's most recent decoded frame (Options.KeepLatest) with a
// reference the caller must Release, or nil.
func (p *Pipeline) LatestFrame(id string) *frame.Frame {
	p.mu.Lock()
	st, ok := p.streams[id]
	p.mu.Unlock()
	if !ok {
		return nil
	}
	return st.Latest()
}

// ModelStats returns, per loaded model, the batches run and frames inferred (summed over the
// model's workers on the host and on GPUs).
func (p *Pipeline) ModelStats() map[string][2]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][2]int64{}
	for k, m := range p.models {
		s := out[k.name]
		out[k.name] = [2]int64{s[0] + m.batches.Load(), s[1] + m.batchItems.Load()}
	}
	return out
}

// ErrStreamExists is returned by AddStream for the id of a stream that runs (errors.Is).
var ErrStreamExists = defs.ErrStreamExists

// ErrNoScene is returned by SetScene for a stream that does not track (tracker: none).
var ErrNoScene = errors.New("the stream does not track (tracker: none): zones and lines need the tracker")

// SetScene replaces a running stream's zones and lines; the next frame uses them.
func (p *Pipeline) SetScene(id string, c analytics.Config) error {
	p.mu.Lock()
	st, ok := p.streams[id]
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("pipeline: no stream %q", id)
	}
	if st.scene == nil {
		return ErrNoScene
	}
	set, err := analytics.Compile(c)
	if err != nil {
		return err
	}
	st.scene.analyzer.Store(set)
	return nil
}
