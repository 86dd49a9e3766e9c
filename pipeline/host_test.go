package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/tensor"
)

// The host path with fakes: a source of synthetic access units, a decoder that takes each
// picture from a frame pool sized as app sizes codec.Decoder's, a preprocessor that
// writes the frame's index into its slot, and an engine whose Run echoes each slot's index as a
// detection's class, so a result carries the frame its input slot held.

const hostWait = 30 * time.Second

var hostSpec = preprocess.Spec{Width: 2, Height: 2, Scale: 1, Std: [3]float32{1, 1, 1}}

const hostSlot = 3 * 2 * 2

// fakeSource yields n key access units (n < 0: without end).
type fakeSource struct {
	n    int
	live bool
	read int
	au   media.AccessUnit
}

func (s *fakeSource) Read(ctx context.Context) (*media.AccessUnit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if s.n >= 0 && s.read >= s.n {
		return nil, io.EOF
	}
	s.au = media.AccessUnit{Codec: media.CodecH264, Data: []byte{0}, Key: true,
		PTS: time.Duration(s.read) * 40 * time.Millisecond}
	s.read++
	return &s.au, nil
}
func (s *fakeSource) Info() media.StreamInfo { return media.StreamInfo{} }
func (s *fakeSource) Live() bool             { return s.live }
func (s *fakeSource) Close() error           { return nil }

// fakeDecoder emits one 4×4 BGR frame per access unit from its pool, waiting for a free frame
// like codec.Decoder.
type fakeDecoder struct {
	pool *frame.Pool
	next int64
}

// fakeDecoders makes decoders whose pools hold frames frames (as app sizes codec.Decoder's).
func fakeDecoders(frames int) func(media.Codec) (pipeline.VideoDecoder, error) {
	return func(media.Codec) (pipeline.VideoDecoder, error) {
		return &fakeDecoder{pool: frame.NewPool("fake", frames, nil)}, nil
	}
}

func (d *fakeDecoder) Pool() *frame.Pool { return d.pool }

func (d *fakeDecoder) Decode(ctx context.Context, au *media.AccessUnit, emit func(*frame.Frame) error) error {
	f, err := d.pool.Get(ctx)
	if err != nil {
		return err
	}
	f.Format, f.Width, f.Height, f.Index, f.PTS = frame.FormatBGR24, 4, 4, d.next, au.PTS
	f.Planes[0], f.Strides[0] = make([]byte, 4*4*3), 4*3
	d.next++
	return emit(f)
}

func (d *fakeDecoder) Flush(context.Context, func(*frame.Frame) error) error { return nil }
func (d *fakeDecoder) Close() error                                          { return nil }

// indexPre writes the frame's index into dst[0]; fail(index) makes it fail for that frame.
type indexPre struct {
	fail  func(int64) bool
	calls atomic.Int32 // goroutines inside Run
	twice atomic.Int32 // Run entered while another call was inside
}

func (p *indexPre) Run(f *frame.Frame, dst []float32) (preprocess.Transform, error) {
	if p.calls.Add(1) > 1 {
		p.twice.Add(1)
	}
	defer p.calls.Add(-1)
	if f.Refs() < 1 {
		return preprocess.Transform{}, errors.New("frame released before it was preprocessed")
	}
	if p.fail != nil && p.fail(f.Index) {
		return preprocess.Transform{}, fmt.Errorf("frame %d refused", f.Index)
	}
	clear(dst)
	dst[0] = float32(f.Index)
	return preprocess.Transform{ScaleX: 1, ScaleY: 1, SrcWidth: f.Width, SrcHeight: f.Height}, nil
}

// fakeEngine is a model whose versions echo their input slots. While gate is open (nil or
// closed) runs go through; a run waits while it is not. It counts misuse: overlapping runs of
// its session, buffers of a version used after its last release.
type fakeEngine struct {
	name     string
	maxBatch int
	cur      atomic.Pointer[fakeVersion]
	versions atomic.Int32

	gateMu sync.Mutex
	gate   chan struct{}

	running  atomic.Int32
	overlaps atomic.Int32
	freed    atomic.Int32 // uses of a freed version
	runs     atomic.Int32
	started  chan struct{} // a run began (buffered, best effort)
	sets     [pipelineInputSets]atomic.Int32
}

const pipelineInputSets = 3

func newFakeEngine(name string, maxBatch int) *fakeEngine {
	e := &fakeEngine{name: name, maxBatch: maxBatch, started: make(chan struct{}, 1024)}
	e.Reload()
	return e
}

// Reload swaps a new version in and retires the old one (freed at its last release).
func (e *fakeEngine) Reload() {
	v := &fakeVersion{e: e, id: int(e.versions.Add(1))}
	v.refs.Store(1)
	if old := e.cur.Swap(v); old != nil {
		old.Release()
	}
}

func (e *fakeEngine) hold() {
	e.gateMu.Lock()
	e.gate = make(chan struct{})
	e.gateMu.Unlock()
}

func (e *fakeEngine) open() {
	e.gateMu.Lock()
	if e.gate != nil {
		close(e.gate)
		e.gate = nil
	}
	e.gateMu.Unlock()
}

func (e *fakeEngine) wait() {
	e.gateMu.Lock()
	g := e.gate
	e.gateMu.Unlock()
	if g != nil {
		<-g
	}
}

func (e *fakeEngine) Name() string { return e.name }

func (e *fakeEngine) Acquire() pipeline.Runner {
	for {
		v := e.cur.Load()
		if v == nil {
			return nil
		}
		if n := v.refs.Load(); n > 0 && v.refs.CompareAndSwap(n, n+1) {
			return v
		}
	}
}

type fakeVersion struct {
	e     *fakeEngine
	id    int
	refs  atomic.Int32
	freed atomic.Bool
	in    [pipelineInputSets][]float32
	out   []float32
	mu    sync.Mutex // guards lazily made buffers
}

func (v *fakeVersion) Preprocess() preprocess.Spec { return hostSpec }
func (v *fakeVersion) MaxBatch() int               { return v.e.maxBatch }
func (v *fakeVersion) Input(n int) ([]float32, error) {
	return v.InputSet(0, n)
}
func (v *fakeVersion) Run(n int) ([]tensor.Tensor, error) { return v.RunSet(0, n) }

func (v *fakeVersion) buf(set int) []float32 {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.in[set] == nil {
		v.in[set] = make([]float32, v.e.maxBatch*hostSlot)
	}
	return v.in[set]
}

func (v *fakeVersion) InputSet(set, n int) ([]float32, error) {
	if v.freed.Load() {
		v.e.freed.Add(1)
	}
	if n < 1 || n > v.e.maxBatch || set < 0 || set >= pipelineInputSets {
		return nil, fmt.Errorf("set %d batch %d", set, n)
	}
	v.e.sets[set].Add(1)
	return v.buf(set)[:n*hostSlot], nil
}

func (v *fakeVersion) RunSet(set, n int) ([]tensor.Tensor, error) {
	if v.freed.Load() {
		v.e.freed.Add(1)
	}
	if v.e.running.Add(1) > 1 {
		v.e.overlaps.Add(1)
	}
	defer v.e.running.Add(-1)
	select {
	case v.e.started <- struct{}{}:
	default:
	}
	v.e.wait()
	v.e.runs.Add(1)
	in := v.buf(set)
	out := make([]float32, n)
	for b := range n {
		out[b] = in[b*hostSlot]
	}
	return []tensor.Tensor{{Info: tensor.Info{Name: "echo", Shape: []int64{int64(n)}, Type: "float32"}, Data: out}}, nil
}

func (v *fakeVersion) Decoder() detect.Decoder { return echoDecoder{} }

func (v *fakeVersion) Release() {
	if v.refs.Add(-1) == 0 {
		v.freed.Store(true)
	}
}

// echoDecoder gives item b one detection whose class is the index its slot held.
type echoDecoder struct{}

func (echoDecoder) Decode(outs []tensor.Tensor, b int, tr preprocess.Transform, dst []detect.Detection) []detect.Detection {
	return append(dst, detect.Detection{ClassID: int(outs[0].Data[b]), Label: "x", Score: 1, Box: [4]float32{0, 0, 2, 2}})
}
func (echoDecoder) Classes() int { return 1 }

// fakeModels serves fake engines by name.
type fakeModels struct {
	engines  map[string]*fakeEngine
	delay    time.Duration
	cascades map[string][]pipeline.Cascade
}

func (m *fakeModels) Engine(name string, device int) (pipeline.Engine, error) {
	if e := m.engines[name]; e != nil && device < 0 {
		return e, nil
	}
	return nil, fmt.Errorf("no model %s", name)
}
func (m *fakeModels) MaxDelay(string) time.Duration           { return m.delay }
func (m *fakeModels) Cascades(name string) []pipeline.Cascade { return m.cascades[name] }

// echoSink checks every result: in stream order, and the detection its slot gave is its frame.
type echoSink struct {
	mu     sync.Mutex
	last   map[string]int64
	n      map[string]int
	errs   []string
	second int // results with secondary detections
}

func (s *echoSink) Write(r *sink.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		s.last, s.n = map[string]int64{}, map[string]int{}
	}
	if last, ok := s.last[r.Stream]; ok && r.Frame <= last {
		s.errs = append(s.errs, fmt.Sprintf("%s: frame %d after %d", r.Stream, r.Frame, last))
	}
	s.last[r.Stream] = r.Frame
	s.n[r.Stream]++
	if len(r.Detections) != 1 || int64(r.Detections[0].ClassID) != r.Frame {
		s.errs = append(s.errs, fmt.Sprintf("%s: frame %d got detections %v", r.Stream, r.Frame, r.Detections))
	}
	if len(r.Secondary) > 0 {
		s.second++
	}
	return nil
}

func (s *echoSink) count(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[id]
}

func (s *echoSink) check(t *testing.T) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.errs) > 0 {
		t.Fatalf("%d bad results, first: %v", len(s.errs), s.errs[:min(5, len(s.errs))])
	}
}

type hostRig struct {
	p      *pipeline.Pipeline
	models *fakeModels
	sink   *echoSink
	logs   *testutil.LogBuffer
}

func newHostRig(t *testing.T, delay time.Duration, engines ...*fakeEngine) *hostRig {
	t.Helper()
	frame.SetDebug(true)
	t.Cleanup(func() { frame.SetDebug(false) })
	m := &fakeModels{engines: map[string]*fakeEngine{}, delay: delay, cascades: map[string][]pipeline.Cascade{}}
	for _, e := range engines {
		m.engines[e.name] = e
	}
	r := &hostRig{models: m, sink: &echoSink{}, logs: &testutil.LogBuffer{}}
	r.p = pipeline.New(pipeline.Options{Models: m, Sinks: []sink.Sink{r.sink}, Log: slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	r.p.Start(context.Background())
	return r
}

func (r *hostRig) add(t *testing.T, id, model string, src *fakeSource, drop config.DropPolicy, pre pipeline.Preprocessor) {
	t.Helper()
	if pre == nil {
		pre = &indexPre{}
	}
	sc := pipeline.StreamConfig{Stream: config.Stream{ID: id, Model: model, Source: "fake", Drop: drop},
		Source: src, NewDecoder: fakeDecoders(max(codec.DefaultFrames, pipeline.DecoderFrames(r.models.engines[model].maxBatch, 0))), Preprocessor: pre, Device: -1}
	if err := r.p.AddStream(sc); err != nil {
		t.Fatal(err)
	}
}

// wait waits for every stream added to end and its frames to go through (Pipeline.Wait).
func (r *hostRig) wait(t *testing.T, what string) {
	t.Helper()
	done := make(chan struct{})
	go func() { r.p.Wait(); close(done) }()
	testutil.Within(t, hostWait, what, done)
}

func (r *hostRig) stats(t *testing.T, id string) pipeline.StreamStatus {
	t.Helper()
	s, ok := r.p.Stream(id)
	if !ok {
		t.Fatalf("no stream %s", id)
	}
	return s
}

// stop stops the pipeline within hostWait and checks that every frame went back to its pool.
func (r *hostRig) stop(t *testing.T, pools ...*frame.Pool) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.p.Stop() }()
	if err := testutil.Within(t, hostWait, "Stop", done); err != nil {
		t.Fatal(err)
	}
	for _, p := range pools {
		if st := p.Stats(); st.InUse != 0 {
			t.Errorf("pool %s: %d frames still in use after Stop", p.Name(), st.InUse)
		}
	}
	testutil.CheckNoFrameLeaks(t, r.logs)
}

// TestHostStagedBatches: three file streams share a model of batch 4 with a batching delay; the
// preprocessor refuses every 7th frame of stream b. Every frame is either inferred, with the
// detection of its own slot (the input set the stage wrote is the one run), in stream order, or
// dropped as an inference error (only b's refused frames); no run overlaps another; every frame
// returns to its pool.
func TestHostStagedBatches(t *testing.T) {
	const n = 150
	e := newFakeEngine("m", 4)
	r := newHostRig(t, time.Millisecond, e)
	refused := func(i int64) bool { return i%7 == 3 }
	pres := map[string]*indexPre{"a": {}, "b": {fail: refused}, "c": {}}
	for _, id := range []string{"a", "b", "c"} {
		r.add(t, id, "m", &fakeSource{n: n}, config.DropBlock, pres[id])
	}
	r.wait(t, "the files to end")
	var pools []*frame.Pool
	sts := map[string]pipeline.StreamStatus{}
	for _, id := range []string{"a", "b", "c"} {
		sts[id] = r.stats(t, id)
		pools = append(pools, sts[id].Pool)
	}
	r.stop(t, pools...)
	r.sink.check(t)
	wantRefused := 0
	for i := range int64(n) {
		if refused(i) {
			wantRefused++
		}
	}
	for id, s := range sts {
		want := 0
		if id == "b" {
			want = wantRefused
		}
		st := s.Stats
		if d, inf, drop := st.Decoded.Load(), st.Inferred.Load(), st.Dropped[pipeline.DropInferError].Load(); d != n || inf != int64(n-want) || drop != int64(want) || st.DroppedTotal() != drop {
			t.Errorf("%s: decoded %d inferred %d dropped %d (total %d), want %d/%d/%d", id, d, inf, drop, st.DroppedTotal(), n, n-want, want)
		}
		if got := r.sink.count(id); got != n-want {
			t.Errorf("%s: %d results, want %d", id, got, n-want)
		}
		if pres[id].twice.Load() > 0 {
			t.Errorf("%s: its preprocessor ran on two goroutines at once %d times", id, pres[id].twice.Load())
		}
	}
	if e.overlaps.Load() > 0 || e.freed.Load() > 0 {
		t.Errorf("engine: %d overlapping runs, %d uses of a freed version", e.overlaps.Load(), e.freed.Load())
	}
	if e.sets[0].Load() > 0 {
		t.Errorf("the worker wrote input set 0 (the cascades') %d times", e.sets[0].Load())
	}
}

// TestHostLiveNeverWaits: a drop-oldest stream keeps decoding (and dropping its oldest queued
// frame) while inference is stuck, with a batch of 4 and a delay long enough for batches to
// fill: the frames the worker holds (the batch running, the next one staged) must not exhaust
// the decoder's frame pool, or the stream stalls on inference like a file.
func TestHostLiveNeverWaits(t *testing.T) {
	e := newFakeEngine("m", 4)
	e.hold()
	r := newHostRig(t, 500*time.Millisecond, e)
	r.add(t, "live", "m", &fakeSource{n: -1, live: true}, config.DropOldest, nil)
	testutil.Within(t, hostWait, "a first run", e.started)
	testutil.Eventually(t, hostWait, "the stream to keep dropping while inference is stuck", func() bool {
		return r.stats(t, "live").Stats.Dropped[pipeline.DropQueueFull].Load() >= 100
	})
	pool := r.stats(t, "live").Pool
	e.open()
	r.stop(t, pool)
	r.sink.check(t)
}

// staged waits until the worker has prepared n batches (input sets handed out).
func (e *fakeEngine) staged(t *testing.T, n int32) {
	t.Helper()
	testutil.Eventually(t, hostWait, fmt.Sprintf("%d batches staged", n), func() bool {
		return e.sets[1].Load()+e.sets[2].Load() >= n
	})
}

// TestHostReloadStaged: a reload while one batch runs and the next is staged in the old
// version's input set: both run on the version they were written into, which is freed only
// after them; every frame gets its own detection.
func TestHostReloadStaged(t *testing.T) {
	const n = 40
	e := newFakeEngine("m", 2)
	e.hold()
	r := newHostRig(t, time.Millisecond, e)
	r.add(t, "a", "m", &fakeSource{n: n}, config.DropBlock, nil)
	testutil.Within(t, hostWait, "a first run", e.started)
	e.staged(t, 2)
	old := e.cur.Load()
	e.Reload()
	if old.freed.Load() {
		t.Fatal("the old version was freed while its batches were in the worker")
	}
	e.open()
	r.wait(t, "the file to end")
	st := r.stats(t, "a")
	r.stop(t, st.Pool)
	r.sink.check(t)
	if !old.freed.Load() || e.freed.Load() > 0 {
		t.Errorf("old version freed %v; %d uses of a freed version", old.freed.Load(), e.freed.Load())
	}
	if got := st.Stats.Inferred.Load(); got != n || r.sink.count("a") != n {
		t.Errorf("inferred %d, %d results, want %d", got, r.sink.count("a"), n)
	}
}

// TestHostRemoveMidBatch: RemoveStream returns while inference is stuck with the stream's
// frames in the running and the staged batch; they still finish, the other stream is not
// disturbed, and every frame of both returns to its pool, counted.
func TestHostRemoveMidBatch(t *testing.T) {
	const n = 60
	e := newFakeEngine("m", 4)
	e.hold()
	r := newHostRig(t, time.Millisecond, e)
	r.add(t, "live", "m", &fakeSource{n: -1, live: true}, config.DropOldest, nil)
	r.add(t, "file", "m", &fakeSource{n: n}, config.DropBlock, nil)
	testutil.Within(t, hostWait, "a first run", e.started)
	e.staged(t, 2)
	live := r.stats(t, "live")
	torn := r.p.TornDown("live")
	removed := make(chan error, 1)
	go func() { removed <- r.p.RemoveStream("live") }()
	if err := testutil.Within(t, hostWait, "RemoveStream while inference is stuck", removed); err != nil {
		t.Fatal(err)
	}
	select {
	case <-torn:
		t.Fatal("TornDown closed while the stream's frames are still in inference")
	default:
	}
	e.open()
	testutil.Within(t, hostWait, "the removed stream torn down (TornDown)", torn)
	if st := live.Pool.Stats(); st.InUse != 0 {
		t.Errorf("torn down with %d frames of its pool in use", st.InUse)
	}
	r.wait(t, "the file to end and the removed stream to drain")
	file := r.stats(t, "file")
	r.stop(t, live.Pool, file.Pool)
	r.sink.check(t)
	if s := live.Stats; s.Decoded.Load() != s.Inferred.Load()+s.DroppedTotal() {
		t.Errorf("removed stream: decoded %d ≠ inferred %d + dropped %d", s.Decoded.Load(), s.Inferred.Load(), s.DroppedTotal())
	}
	if s := file.Stats; s.Inferred.Load() != n || s.DroppedTotal() != 0 {
		t.Errorf("file: inferred %d dropped %d, want %d/0", s.Inferred.Load(), s.DroppedTotal(), n)
	}
}

// TestHostCascadeShared: model s is the cascade of m and serves a stream of its own. The
// cascade's runs (input set 0) and s's own worker (sets 1 and 2, the next batch written while
// one runs) never run s's session at once; every result of both streams is right.
func TestHostCascadeShared(t *testing.T) {
	const n = 80
	m, s := newFakeEngine("m", 2), newFakeEngine("s", 2)
	r := newHostRig(t, time.Millisecond, m, s)
	r.models.cascades["m"] = []pipeline.Cascade{{Model: "s"}}
	r.add(t, "p", "m", &fakeSource{n: n}, config.DropBlock, nil)
	r.add(t, "q", "s", &fakeSource{n: n}, config.DropBlock, nil)
	r.wait(t, "the files to end")
	p, q := r.stats(t, "p"), r.stats(t, "q")
	r.stop(t, p.Pool, q.Pool)
	r.sink.check(t)
	for _, st := range []pipeline.StreamStatus{p, q} {
		if st.Stats.Inferred.Load() != n || r.sink.count(st.ID) != n {
			t.Errorf("%s: inferred %d, %d results, want %d", st.ID, st.Stats.Inferred.Load(), r.sink.count(st.ID), n)
		}
	}
	if s.overlaps.Load() > 0 || m.overlaps.Load() > 0 {
		t.Errorf("overlapping runs of a session: s %d, m %d", s.overlaps.Load(), m.overlaps.Load())
	}
	if r.sink.second != n || s.sets[0].Load() == 0 || s.sets[1].Load() == 0 {
		t.Errorf("%d results with secondary detections (want %d); s's input sets used %d/%d/%d",
			r.sink.second, n, s.sets[0].Load(), s.sets[1].Load(), s.sets[2].Load())
	}
}

// TestHostModelClosed: the model closes (Acquire nil) while two batches are pinned in the worker:
// they run; every later batch is dropped as an inference error, counted, and the pipeline
// still stops with every frame back.
func TestHostModelClosed(t *testing.T) {
	const n = 30
	e := newFakeEngine("m", 2)
	e.hold()
	r := newHostRig(t, time.Millisecond, e)
	r.add(t, "a", "m", &fakeSource{n: n}, config.DropBlock, nil)
	e.staged(t, 2)
	e.cur.Swap(nil).Release()
	e.open()
	r.wait(t, "the file to end")
	st := r.stats(t, "a")
	r.stop(t, st.Pool)
	r.sink.check(t)
	s := st.Stats
	if inf, drop := s.Inferred.Load(), s.Dropped[pipeline.DropInferError].Load(); s.Decoded.Load() != n || inf+drop != n || drop == 0 || int(inf) != r.sink.count("a") {
		t.Errorf("decoded %d, inferred %d (%d results), dropped as inference errors %d, want %d in all, some dropped",
			s.Decoded.Load(), inf, r.sink.count("a"), drop, n)
	}
	if e.freed.Load() > 0 {
		t.Errorf("%d uses of a freed version", e.freed.Load())
	}
}
