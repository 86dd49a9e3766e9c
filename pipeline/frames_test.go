package pipeline_test

import (
	"context"
	"errors"
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

// frameEngine serves a model as a pipeline.FrameRunner on the CPU: RunFrames preprocesses the
// batch's frames with preprocess.CPU itself. It stands in for a GPU runner (model.DeviceVersion)
// to test the pipeline's device-frame path where no GPU exists: the pipeline cannot tell them
// apart.
type frameEngine struct {
	e     *model.Entry
	pre   *preprocess.CPU
	binds atomic.Int32
	max   atomic.Int32 // largest batch seen
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

func (r frameRunner) Bind() error { r.f.binds.Add(1); return nil }

func (r frameRunner) RunFrames(frames []*frame.Frame, tr []preprocess.Transform) ([]tensor.Tensor, error) {
	n := len(frames)
	if int32(n) > r.f.max.Load() {
		r.f.max.Store(int32(n))
	}
	in, err := r.Input(n)
	if err != nil {
		return nil, err
	}
	slot := len(in) / n
	for b, fr := range frames {
		if fr.Refs() < 1 {
			panic("frame released before RunFrames")
		}
		if tr[b], err = r.f.pre.Run(fr, in[b*slot:(b+1)*slot]); err != nil {
			return nil, err
		}
	}
	return r.Run(n)
}

// detections keeps every result's detections by stream and frame.
type detections struct {
	mu sync.Mutex
	m  map[string]map[int64][]detect.Detection
}

func (d *detections) Write(r *sink.Result) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]map[int64][]detect.Detection{}
	}
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
		pre, err := preprocess.NewCPU(e.Current().Pre)
		if err != nil {
			return nil, err
		}
		fe, _ := engines.LoadOrStore(device, &frameEngine{e: e, pre: pre})
		return fe.(*frameEngine), nil
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
		if b := fe.(*frameEngine).binds.Load(); b != 1 {
			t.Errorf("device %d: worker bound its thread %d times, want once", dev, b)
		}
	}
	if fe, _ := engines.Load(0); fe.(*frameEngine).max.Load() < 2 {
		t.Logf("device 0 never batched its two streams' frames (timing)")
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
