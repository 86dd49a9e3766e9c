// Package app assembles a running vinfer from a configuration: the model registry, the
// pipeline, sources and decoders per stream, and the sinks. cmd/vinfer and the HTTP API drive it.
package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gpurun"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
)

// App is a configured vinfer instance.
type App struct {
	Config   *config.Config
	Registry *model.Registry
	Pipeline *pipeline.Pipeline
	// GPUs are the devices of the streams with decoder: nvdec (none are opened otherwise).
	GPUs    *gpurun.Devices
	Log     *slog.Logger
	Started time.Time

	mu      sync.Mutex
	streams map[string]config.Stream
	fanout  *Fanout
}

// Options tune New.
type Options struct {
	// Sinks receive every result (in addition to the fan-out subscribers).
	Sinks []sink.Sink
	// Log receives events (default slog.Default()).
	Log *slog.Logger
	// KeepLatest retains each stream's latest frame for snapshots (the web view).
	KeepLatest bool
	// WatchModels reloads a model when its file changes (polled every second).
	WatchModels bool
	// OnBatch and OnResult observe batches and results (metrics).
	OnBatch  func(model string, size int)
	OnResult func(r *sink.Result)
}

// New builds the registry and pipeline and starts the pipeline (no streams yet).
func New(ctx context.Context, cfg *config.Config, o Options) *App {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	a := &App{Config: cfg, Log: o.Log, Started: time.Now(), streams: map[string]config.Stream{}, fanout: newFanout(),
		GPUs: &gpurun.Devices{}}
	a.Registry = model.NewRegistry(cfg.Models)
	a.Registry.Logf = func(f string, args ...any) { a.Log.Info(fmt.Sprintf(f, args...)) }
	a.Pipeline = pipeline.New(pipeline.Options{
		Engine: func(name string) (pipeline.Engine, error) {
			e, err := a.Registry.Get(name)
			if err != nil {
				return nil, err
			}
			return engine{e}, nil
		},
		DeviceEngine: func(name string, device int) (pipeline.Engine, error) {
			e, err := a.Registry.GetDevice(name, device)
			if err != nil {
				return nil, err
			}
			return engine{e}, nil
		},
		MaxDelay: func(name string) time.Duration {
			d, _ := a.Registry.Declaration(name)
			if d.MaxDelay == 0 {
				return 2 * time.Millisecond
			}
			return time.Duration(d.MaxDelay)
		},
		Cascades:   a.cascades,
		Sinks:      append(o.Sinks, a.fanout),
		KeepLatest: o.KeepLatest,
		Logf:       func(f string, args ...any) { a.Log.Warn(fmt.Sprintf(f, args...)) },
		Debugf:     func(f string, args ...any) { a.Log.Debug(fmt.Sprintf(f, args...)) },
		OnBatch:    o.OnBatch,
		OnResult:   o.OnResult,
	})
	a.Pipeline.Start(ctx)
	if o.WatchModels {
		a.Registry.Watch(ctx, time.Second)
	}
	return a
}

// cascades resolves a model's cascade declarations, parent class names to ids.
func (a *App) cascades(name string) []pipeline.Cascade {
	d, _ := a.Registry.Declaration(name)
	if len(d.Cascade) == 0 {
		return nil
	}
	var labels []string
	if e := a.Registry.Loaded(name); e != nil && e.Current() != nil {
		labels = e.Current().Post.Labels
	}
	var out []pipeline.Cascade
	for _, c := range d.Cascade {
		pc := pipeline.Cascade{Model: c.Model, MinScore: c.MinScore, MaxCrops: c.MaxCrops}
		for _, want := range c.Classes {
			for id, l := range labels {
				if l == want {
					pc.Classes = append(pc.Classes, id)
				}
			}
		}
		if len(c.Classes) > 0 && len(pc.Classes) == 0 {
			a.Log.Warn(fmt.Sprintf("model %s: cascade to %s: none of the classes %v is a label of %s; cascade disabled", name, c.Model, c.Classes, name))
			continue
		}
		out = append(out, pc)
	}
	return out
}

// engine adapts a registry entry to pipeline.Engine.
type engine struct{ e *model.Entry }

func (e engine) Name() string { return e.e.Name() }

// Acquire returns the current version; a GPU version is a pipeline.FrameRunner.
func (e engine) Acquire() pipeline.Runner {
	v := e.e.Acquire()
	if v == nil {
		return nil
	}
	if d, ok := v.OnDevice(); ok {
		return d
	}
	return v
}

// AddStream opens a stream's source and starts it. Errors say what to fix; other streams are
// not affected.
func (a *App) AddStream(s config.Stream) error {
	if err := s.Validate("stream " + s.ID); err != nil {
		return err
	}
	if s.ID == "" || s.Source == "" {
		return errors.New("stream: id and source are required")
	}
	if _, ok := a.Registry.Declaration(s.Model); !ok {
		return fmt.Errorf("stream %s: model %q is not declared (have %v)", s.ID, s.Model, a.Registry.Names())
	}
	a.mu.Lock()
	_, dup := a.streams[s.ID]
	a.mu.Unlock()
	if dup {
		return fmt.Errorf("stream %s already exists", s.ID)
	}
	id := s.ID
	sc := pipeline.StreamConfig{ID: id, Model: s.Model, Interval: s.Interval, MaxFPS: s.MaxFPS,
		NewDecoder: func(c media.Codec) (pipeline.VideoDecoder, error) {
			d := &codec.Decoder{Codec: c, Name: "stream " + id}
			if err := d.Init(); err != nil {
				return nil, err
			}
			return d, nil
		},
	}
	if s.OnGPU() {
		if err := a.gpuStream(s, &sc); err != nil {
			return err
		}
	}
	src, err := OpenSource(s)
	if err != nil {
		return err
	}
	sc.Source = src
	sc.Policy = pipeline.Block
	if s.Drop == "oldest" || (s.Drop == "" && src.Live()) {
		sc.Policy = pipeline.DropOldest
	}
	err = a.Pipeline.AddStream(sc)
	if err != nil {
		src.Close()
		return err
	}
	a.mu.Lock()
	a.streams[s.ID] = s
	a.mu.Unlock()
	return nil
}

// gpuStream sets up a decoder: nvdec stream: checks its model, picks its GPU (opening the
// device, its context retained once, before anything of the stream runs) and makes its
// frames NVDEC's, in device memory, for the model's runner on that GPU.
func (a *App) gpuStream(s config.Stream, sc *pipeline.StreamConfig) error {
	decl, _ := a.Registry.Declaration(s.Model)
	if err := config.CheckGPUModel("stream", &s, &decl); err != nil {
		return err
	}
	want := -1
	if s.GPU != nil {
		want = *s.GPU
	}
	dev, err := a.GPUs.Pick(want)
	if err != nil {
		return fmt.Errorf("stream %s: decoder nvdec: %w (use decoder: cpu on this machine)", s.ID, err)
	}
	sc.DeviceFrames, sc.Device = true, dev.Ordinal()
	sc.NewDecoder = func(c media.Codec) (pipeline.VideoDecoder, error) {
		d := &gpurun.Decoder{Device: dev, Codec: c}
		if err := d.Init(); err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil
}

// RemoveStream stops and releases a stream.
func (a *App) RemoveStream(id string) error {
	if err := a.Pipeline.RemoveStream(id); err != nil {
		return err
	}
	a.mu.Lock()
	delete(a.streams, id)
	a.mu.Unlock()
	return nil
}

// StreamConfig returns a stream's declaration.
func (a *App) StreamConfig(id string) (config.Stream, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.streams[id]
	return s, ok
}

// Subscribe returns a channel of encoded results (JSON objects) for live consumers (SSE,
// WebSocket); slow subscribers lose messages (counted) rather than slowing the pipeline.
func (a *App) Subscribe(stream string) (<-chan []byte, func()) { return a.fanout.subscribe(stream) }

// Stop stops every stream, drains the pipeline and frees the models.
func (a *App) Stop() error {
	err := a.Pipeline.Stop()
	a.Registry.Close()
	if gerr := a.GPUs.Close(); err == nil {
		err = gerr
	}
	return err
}
