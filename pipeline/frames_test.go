package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/vinfer/vinfer/internal/testutil"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/file"
	"github.com/vinfer/vinfer/tensor"
)

// frameEngine serves a model as a pipeline.FrameRunner on the CPU: Submit preprocesses the
// batch's frames with preprocess.CPU itself and runs the batch at once, keeping copies of the
// outputs per (lane, slot) for Wait. It stands in for a GPU runner (model.DeviceVersion) to
// test the pipeline's device-frame path where no GPU exists: the pipeline cannot tell them
// apart.
type frameEngine struct {
	e        *model.Entry
	pre      *preprocess.CPU
	lanes    int
	inflight int
	binds    atomic.Int32
	max      atomic.Int32 // largest batch seen
	mu       sync.Mutex   // the version's one session
	decs     []detect.Decoder
	out      [][][]tensor.Tensor // by lane, slot
	pending  [][]bool            // by lane, slot: submitted, not waited for
	busy     []atomic.Int32      // by lane: goroutines inside the lane (must stay ≤ 1)
	inFlight atomic.Int32        // batches submitted, not waited for
	maxIn    atomic.Int32        // most batches in flight at once
	views    bool                // takes crop views (a cascade's), which are not reference counted
}

func newFrameEngine(e *model.Entry, lanes, inflight int) (*frameEngine, error) {
	pre, err := preprocess.NewCPU(e.Current().Pre)
	if err != nil {
		return nil, err
	}
	f := &frameEngine{e: e, pre: pre, lanes: lanes, inflight: inflight, busy: make([]atomic.Int32, lanes)}
	for range lanes {
		d, err := e.Current().NewDecoder()
		if err != nil {
			return nil, err
		}
		f.decs = append(f.decs, d)
		f.out = append(f.out, make([][]tensor.Tensor, inflight))
		f.pending = append(f.pending, make([]bool, inflight))
	}
	return f, nil
}

func (f *frameEngine) Name() string { return f.e.Name() }

func (f *frameEngine) Acquire() pipeline.Runner {
	if v := f.e.Acquire(); v != nil {
		return frameRunner{v, f}
	}
	return nil
}

type frameRunner struct {
	*model.Version
	f *frameEngine
}

func (r frameRunner) Lanes() int                          { return r.f.lanes }
func (r frameRunner) InFlight() int                       { return r.f.inflight }
func (r frameRunner) Bind() error                         { r.f.binds.Add(1); return nil }
func (r frameRunner) LaneDecoder(lane int) detect.Decoder { return r.f.decs[lane] }

func (r frameRunner) enter(lane int) func() {
	if r.f.busy[lane].Add(1) != 1 {
		panic("two goroutines in one lane")
	}
	return func() { r.f.busy[lane].Add(-1) }
}

func (r frameRunner) Submit(lane, slot int, frames []*frame.Frame, tr []preprocess.Transform) error {
	defer r.enter(lane)()
	if r.f.pending[lane][slot] {
		panic("slot submitted twice without Wait")
	}
	n := len(frames)
	if int32(n) > r.f.max.Load() {
		r.f.max.Store(int32(n))
	}
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	in, err := r.Input(n)
	if err != nil {
		return err
	}
	slotLen := len(in) / n
	for b, fr := range frames {
		if fr.Refs() < 1 && !r.f.views {
			panic("frame released before Submit")
		}
		if tr[b], err = r.f.pre.Run(fr, in[b*slotLen:(b+1)*slotLen]); err != nil {
			return err
		}
	}
	outs, err := r.Run(n)
	if err != nil {
		return err
	}
	dst := r.f.out[lane][slot][:0]
	for _, o := range outs {
		dst = append(dst, tensor.Tensor{Info: o.Info, Data: append([]float32(nil), o.Data...)})
	}
	r.f.out[lane][slot] = dst
	r.f.pending[lane][slot] = true
	if in := r.f.inFlight.Add(1); in > r.f.maxIn.Load() {
		r.f.maxIn.Store(in)
	}
	return nil
}

func (r frameRunner) Wait(lane, slot int) ([]tensor.Tensor, error) {
	defer r.enter(lane)()
	if !r.f.pending[lane][slot] {
		panic("Wait on a slot not submitted")
	}
	r.f.pending[lane][slot] = false
	r.f.inFlight.Add(-1)
	return r.f.out[lane][slot], nil
}

// detections keeps every result's detections by stream and frame, and the results that came
// out of their stream's order.
type detections struct {
	mu       sync.Mutex
	m        map[string]map[int64][]detect.Detection
	last     map[string]int64
	disorder []string
}

func (d *detections) Write(r *sink.Result) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]map[int64][]detect.Detection{}
		d.last = map[string]int64{}
	}
	if last, ok := d.last[r.Stream]; ok && r.Frame <= last {
		d.disorder = append(d.disorder, fmt.Sprintf("%s: frame %d after %d", r.Stream, r.Frame, last))
	}
	d.last[r.Stream] = r.Frame
	if d.m[r.Stream] == nil {
		d.m[r.Stream] = map[int64][]detect.Detection{}
	}
	d.m[r.Stream][r.Frame] = append([]detect.Detection(nil), r.Detections...)
	return nil
}

// TestDeviceFramesPath runs one file as three streams: one on the usual path (preprocessed on
// the stream's goroutine into an input slot) and two marked DeviceFrames on "devices" 0 and 1,
// whose frames are queued as frames and preprocessed by the FrameRunner of their (model,
// device). Every frame is inferred on each, with the same detections, each device worker binds
// its thread once, batches form across streams, and every frame returns to its pool.
func TestDeviceFramesPath(t *testing.T) {
	frame.SetDebug(true)
	defer frame.SetDebug(false)
	decl := config.Model{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx")}
	host := model.NewRegistry([]config.Model{decl})
	defer host.Close()
	var engines sync.Map // device → *frameEngine
	var regs []*model.Registry
	var regMu sync.Mutex
	defer func() {
		for _, r := range regs {
			r.Close()
		}
	}()
	logs := &testutil.LogBuffer{}
	rec := &detections{}
	p := pipeline.New(pipeline.Options{Models: engines3(func(name string, device int) (pipeline.Engine, error) {
		if device < 0 {
			e, err := host.Get(name)
			if err != nil {
				return nil, err
			}
			return hostEngine{e}, nil
		}
		if fe, ok := engines.Load(device); ok {
			return fe.(*frameEngine), nil
		}
		// One registry (one session) per device, as a GPU has its own engine.
		regMu.Lock()
		defer regMu.Unlock()
		r := model.NewRegistry([]config.Model{{Name: decl.Name, Path: decl.Path, MaxBatch: 4}})
		regs = append(regs, r)
		e, err := r.Get(name)
		if err != nil {
			return nil, err
		}
		fe, err := newFrameEngine(e, 2, 2)
		if err != nil {
			return nil, err
		}
		got, _ := engines.LoadOrStore(device, fe)
		return got.(*frameEngine), nil
	}),
		Sinks: []sink.Sink{rec},
		Log:   slog.New(slog.NewTextHandler(logs, nil)),
	})
	p.Start(context.Background())
	video := filepath.Join(assets(t), "videos", "car-detection.mp4")
	for i, id := range []string{"host", "dev0", "dev1", "dev0b"} {
		src := &file.Source{Path: video}
		if err := src.Init(); err != nil {
			t.Fatal(err)
		}
		decl := config.Stream{ID: id, Model: "m", Interval: 4}
		if i > 0 {
			decl.Decoder = config.DecoderNVDEC
		}
		err := p.AddStream(pipeline.StreamConfig{Stream: decl, Source: src, Device: (i + 1) % 2,
			NewDecoder: func(c media.Codec) (pipeline.VideoDecoder, error) {
				d := &codec.Decoder{Codec: c, Name: id}
				return d, d.Init()
			}})
		if err != nil {
			t.Fatal(err)
		}
	}
	p.Wait()
	streams := p.Streams()
	stats := p.ModelStats()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	testutil.CheckNoFrameLeaks(t, logs)
	for _, s := range streams {
		if s.Err != nil || s.Stats.Inferred.Load() != 95 || s.Stats.Dropped[pipeline.DropInterval].Load() != 282 {
			t.Errorf("%s: err %v, inferred %d, interval drops %d; want 95 and 282", s.ID, s.Err,
				s.Stats.Inferred.Load(), s.Stats.Dropped[pipeline.DropInterval].Load())
		}
	}
	if got := stats["m"][1]; got != 4*95 {
		t.Errorf("ModelStats counts %d frames for m over its three workers, want %d", got, 4*95)
	}
	for dev := range 2 {
		fe, ok := engines.Load(dev)
		if !ok {
			t.Fatalf("no engine for device %d", dev)
		}
		if b := fe.(*frameEngine).binds.Load(); b < 1 || b > 2 {
			t.Errorf("device %d: its 2 lane workers bound their threads %d times, want once each at most", dev, b)
		}
	}
	if fe, _ := engines.Load(0); fe.(*frameEngine).max.Load() < 2 {
		t.Logf("device 0 never batched its two streams' frames (timing)")
	}
	if len(rec.disorder) > 0 {
		t.Errorf("results out of their stream's order: %v", rec.disorder)
	}
	for dev := range 2 {
		fe, _ := engines.Load(dev)
		t.Logf("device %d: at most %d batches in flight at once", dev, fe.(*frameEngine).maxIn.Load())
	}
	want := rec.m["host"]
	for _, id := range []string{"dev0", "dev1", "dev0b"} {
		got := rec.m[id]
		if len(got) != len(want) {
			t.Fatalf("%s: %d results, host path %d", id, len(got), len(want))
		}
		for fi, w := range want {
			g := got[fi]
			if len(g) != len(w) {
				t.Fatalf("%s frame %d: %d detections, host path %d", id, fi, len(g), len(w))
			}
			for k := range w {
				for c := range 4 {
					if math.Abs(float64(g[k].Box[c]-w[k].Box[c])) > 0.01 || g[k].ClassID != w[k].ClassID || math.Abs(float64(g[k].Score-w[k].Score)) > 1e-4 {
						t.Fatalf("%s frame %d detection %d: %+v, host path %+v", id, fi, k, g[k], w[k])
					}
				}
			}
		}
	}
}

// TestDeviceFramesRefused: without a DeviceEngine, or with one whose runners do not take
// frames, a DeviceFrames stream is refused with an error naming the model.
func TestDeviceFramesRefused(t *testing.T) {
	decl := config.Model{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx")}
	reg := model.NewRegistry([]config.Model{decl})
	defer reg.Close()
	get := func(name string) (pipeline.Engine, error) {
		e, err := reg.Get(name)
		return hostEngine{e}, err
	}
	for _, tc := range []struct {
		name string
		opts pipeline.Options
		want string
	}{
		{"no device engine", pipeline.Options{Models: engines3(func(n string, d int) (pipeline.Engine, error) {
			if d >= 0 {
				return nil, errors.New("no engine provider for GPU frames")
			}
			return get(n)
		})}, "no engine provider for GPU frames"},
		{"host runner", pipeline.Options{Models: engines3(func(n string, _ int) (pipeline.Engine, error) { return get(n) })},
			"does not take frames"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pipeline.New(tc.opts)
			p.Start(context.Background())
			defer p.Stop()
			src := &file.Source{Path: filepath.Join(assets(t), "videos", "car-detection.mp4")}
			if err := src.Init(); err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			err := p.AddStream(pipeline.StreamConfig{Stream: config.Stream{ID: "s", Model: "m", Decoder: config.DecoderNVDEC},
				Source: src, Device: 0, NewDecoder: func(media.Codec) (pipeline.VideoDecoder, error) { return nil, errors.New("unused") }})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "m") {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// hostEngine adapts a registry entry to pipeline.Engine (as package app does).
type hostEngine struct{ e *model.Entry }

func (h hostEngine) Name() string { return h.e.Name() }

func (h hostEngine) Acquire() pipeline.Runner {
	if v := h.e.Acquire(); v != nil {
		return v
	}
	return nil
}
func assets(t testing.TB) string { return filepath.Join(testutil.Root(t), "assets") }

// engines3 is a pipeline.Models of one engine function, no batching delay and no cascades.
type engines3 func(name string, device int) (pipeline.Engine, error)

func (f engines3) Engine(name string, device int) (pipeline.Engine, error) { return f(name, device) }
func (engines3) MaxDelay(string) time.Duration                             { return 0 }
func (engines3) Cascades(string) []pipeline.Cascade                        { return nil }
