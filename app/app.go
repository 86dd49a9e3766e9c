// Package app assembles a running vinfer from a configuration: the model registry, the
// pipeline, a source and decoder per stream, and the sinks. It satisfies the small interfaces
// of package defs, through which cmd/vinfer, the HTTP API and the metrics drive and watch it.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/evidence"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/onvifmeta"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source"
)

// App is a configured vinfer instance.
type App struct {
	Config   *config.Config
	Registry *model.Registry
	Pipeline *pipeline.Pipeline
	// GPUs are the devices of the streams with decoder: nvdec (none are opened otherwise).
	Devices *cuda.Devices
	Log     *slog.Logger

	started time.Time
	sinksMu sync.Mutex   // guards sinks against a scrape during Stop
	cameras cameraEvents // onvif:// streams' event watches (app/onvif.go)
	found   discovered   // the last ONVIF camera discovery (app/onvif.go)
	sinks   []sink.Sink  // opened from the configuration, closed by Stop
	fanout  *Fanout
	gpuMem  gpuMemory
	limits  *limits

	evidence *evidence.Recorder // nil without an evidence section (app/evidence.go)
	rec      *recording         // nil without a record section (app/record.go)
	gb       *gbPlatform        // the GB28181 platform (gb28181.go), nil without a gb28181: section
	live     *liveView          // the live view (live.go)
	rtspMeta *onvifmeta.Server  // output.rtsp (rtspmeta.go), nil without it

	failed      failedStreams // configured streams that could not start (retry.go)
	overload    *overload     // degraded streams (overload.go)
	overloadEnd func()        // stops the overload watch and waits for it
	decPools    decoderPools  // shared decoders of idle streams (decpool.go)
}

var (
	_ defs.Streams       = (*App)(nil)
	_ defs.StreamControl = (*App)(nil)
	_ defs.Models        = (*App)(nil)
	_ defs.GPUs          = (*App)(nil)
	_ defs.Frames        = (*App)(nil)
	_ defs.Results       = (*App)(nil)
)

// Options tune New.
type Options struct {
	// Sinks receive every result, besides those of the configuration's output section and the
	// live subscribers.
	Sinks []sink.Sink
	// Stdout is where a sink writing to "-" writes (default os.Stdout).
	Stdout io.Writer
	// Log receives events (default slog.Default()).
	Log *slog.Logger
	// KeepLatest retains each stream's latest frame for snapshots (the web view).
	KeepLatest bool
	// WatchModels reloads a model when its file changes (checked every second).
	WatchModels bool
	// Observer sees every batch and result (metrics).
	Observer pipeline.Observer
}

// New opens the configuration's sinks, builds the registry and pipeline and starts the pipeline
// (no streams yet). Stop releases everything.
func New(ctx context.Context, cfg *config.Config, o Options) (*App, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	a := &App{Config: cfg, Log: o.Log, started: time.Now(), fanout: newFanout(), Devices: &cuda.Devices{},
		limits: newLimits(&cfg.Sources, cfg.Dir)}
	env := sink.Env{Dir: cfg.Dir, DataDir: cfg.Output.DataDir, Stdout: o.Stdout, Log: o.Log}
	for _, decl := range sinkDecls(cfg.Output) {
		s, err := sink.Open(decl, env)
		if err != nil {
			a.closeSinks()
			return nil, fmt.Errorf("output: %w", err)
		}
		a.sinks = append(a.sinks, s)
	}
	if err := a.openEvidence(cfg.Evidence); err != nil {
		a.closeSinks()
		return nil, err
	}
	if a.evidence != nil { // closed with the sinks, after the last result
		a.sinks = append([]sink.Sink{a.evidence}, a.sinks...)
	}
	if err := a.openRecord(cfg.Record); err != nil {
		a.closeSinks()
		return nil, err
	}
	if a.rec != nil { // the results log, closed with the sinks
		a.sinks = append(a.sinks, a.rec)
	}
	if err := a.openLive(); err != nil {
		a.closeSinks()
		return nil, err
	}
	if err := a.openRTSPMeta(); err != nil {
		a.closeSinks()
		return nil, err
	}
	if err := a.startGB28181(); err != nil {
		a.closeSinks()
		return nil, fmt.Errorf("gb28181: %w", err)
	}
	a.Registry = model.NewRegistry(cfg.Models)
	a.Registry.Logf = func(f string, args ...any) { a.Log.Info(fmt.Sprintf(f, args...)) }
	// The evidence recorder (a.sinks[0] when there is one) runs first: it puts has_clip and
	// the clip's and snapshot's URLs on the events the other sinks encode.
	own := a.sinks
	var sinks []sink.Sink
	if a.evidence != nil {
		sinks, own = append(sinks, a.evidence), own[1:]
	}
	sinks = append(append(append(append(sinks, a.cascadeSinks()...), o.Sinks...), own...), a.fanout)
	a.Pipeline = pipeline.New(pipeline.Options{Models: models{a}, Sinks: sinks, Observer: o.Observer,
		KeepLatest: o.KeepLatest, Log: a.Log})
	a.Pipeline.Start(ctx)
	a.linkCascade()
	ratio, window := cfg.Sources.Overload()
	a.overload = newOverload(ratio, window, a.Log)
	octx, ocancel := context.WithCancel(ctx)
	odone := make(chan struct{})
	go func() { defer close(odone); a.overload.run(octx, a.Pipeline) }()
	a.overloadEnd = func() { ocancel(); <-odone }
	if o.WatchModels {
		a.Registry.Watch(ctx, time.Second)
	}
	a.gpuMem.open(cfg, a.Log)
	return a, nil
}

// sinkDecls returns the output section's sinks: output.jsonl (unless empty or "none") then
// output.sinks.
func sinkDecls(o config.Output) []config.Sink {
	var out []config.Sink
	if o.JSONL != "" && o.JSONL != "none" {
		out = append(out, config.NewSink("jsonl", map[string]any{"path": o.JSONL}))
	}
	if o.Events != "" && o.Events != "none" {
		out = append(out, NewEventsSink(o.Events))
	}
	return append(out, o.Sinks...)
}

// Started is when the app was created.
func (a *App) Started() time.Time { return a.started }

// AddStream checks a stream against the declared models, opens its source and starts it. The
// declaration is trusted (the configuration file): its files may lie anywhere. Errors say what
// to fix; other streams are not affected.
func (a *App) AddStream(s config.Stream) error { return a.addStream(s, nil, false) }

// AddRemoteStream is AddStream for declarations from outside (the API): files the source names
// must lie in the allowed directories (sources.allow_paths; default the config file's directory
// and the assets).
func (a *App) AddRemoteStream(s config.Stream) error {
	return a.addStream(s, a.limits.roots, false)
}

// addStream adds s; retry is set for StartStream's attempts, whose id is listed as failed
// meanwhile. Errors met opening the source are errOpen.
func (a *App) addStream(s config.Stream, roots []string, retry bool) error {
	s.Activity = s.Activity.Over(a.Config.Activity)
	if err := a.Config.CheckStream(&s); err != nil {
		return fmt.Errorf("stream %s: %w", s.ID, err)
	}
	if _, ok := a.Pipeline.Stream(s.ID); ok || (!retry && a.failed.has(s.ID)) {
		return fmt.Errorf("stream %s: %w", s.ID, defs.ErrStreamExists)
	}
	if err := a.checkClasses(&s); err != nil {
		return fmt.Errorf("stream %s: %w", s.ID, err)
	}
	id := s.ID
	var src source.Source // opened below, before the first access unit makes the decoder
	sc := pipeline.StreamConfig{Stream: s, Device: -1,
		NewDecoder: func(c media.Codec) (pipeline.VideoDecoder, error) {
			d := &codec.Decoder{Codec: c, Name: "stream " + id, OutputCorrupt: s.Concealed == config.ConcealedInfer,
				Frames: a.decoderFrames(s.Model), ReorderPTS: src.Info().PTSInDecodeOrder}
			d.SkipNonRef = s.SkipNonRef && !d.ReorderPTS // raw Annex-B files: stamps in decoding order
			if err := d.Init(); err != nil {
				return nil, err
			}
			return d, nil
		},
	}
	sc.AUObserver = a.liveObserver(s.ID, a.auObserver(s.ID))
	if s.OnGPU() {
		if err := a.gpuStream(&sc, func() bool { return src.Info().PTSInDecodeOrder }); err != nil {
			return err
		}
	}
	if err := a.poolDecoders(&sc); err != nil { // app/decpool.go
		return err
	}
	release, err := a.limits.admit(s.ID)
	if err != nil {
		return errOpen{fmt.Errorf("stream %s: %w", s.ID, err)}
	}
	src, err = source.Open(&s, source.Policy{Roots: roots, OpenTimeout: a.limits.timeout})
	release()
	if err != nil {
		a.limits.drop(s.ID)
		return errOpen{err}
	}
	sc.Source = src
	recorded := a.recordStream(&sc, &s) // app/record.go
	if err := a.Pipeline.AddStream(sc); err != nil {
		if recorded != nil {
			recorded.EndOfStream()
		}
		src.Close()
		a.limits.drop(s.ID)
		return err
	}
	a.tellScene(s.ID, &s.Config)
	a.watchCamera(&s)
	return nil
}

// decoderFrames is the frame pool of a host stream's decoder for model (loaded by then): enough
// for the frames the pipeline holds (pipeline.DecoderFrames), at least codec.DefaultFrames.
func (a *App) decoderFrames(model string) int {
	mb := 1
	if e := a.Registry.Loaded(model); e != nil && e.Current() != nil {
		mb = e.Current().MaxBatch()
	}
	return max(codec.DefaultFrames, pipeline.DecoderFrames(mb, 0))
}

// gpuStream sets up a decoder: nvdec stream: picks its GPU (opening the device, its context
// retained once, before anything of the stream runs) and makes its frames NVDEC's, in device
// memory, for the model's runner on that GPU. reorder tells, when the decoder is made, whether
// the source's PTS are a decoding-order count (media.StreamInfo.PTSInDecodeOrder).
func (a *App) gpuStream(sc *pipeline.StreamConfig, reorder func() bool) error {
	want := -1
	if sc.GPU != nil {
		want = *sc.GPU
	}
	dev, err := a.Devices.Pick(want)
	if err != nil {
		return fmt.Errorf("stream %s: decoder nvdec: %w (use decoder: cpu on this machine)", sc.ID, err)
	}
	sc.Device = dev.Ordinal()
	sc.NewDecoder = func(c media.Codec) (pipeline.VideoDecoder, error) {
		d := &codec.NVDECStream{Device: dev, Codec: c, ReorderPTS: reorder()}
		if err := d.Init(); err != nil {
			return nil, err
		}
		return d, nil
	}
	return nil
}

// RemoveStream stops and releases a stream; a failed one (StartStream) is no longer retried.
func (a *App) RemoveStream(id string) error {
	if a.failed.remove(id) {
		a.tellRemoved(id) // a no-op unless it once ran
		return nil
	}
	torn := a.Pipeline.TornDown(id)
	if err := a.Pipeline.RemoveStream(id); err != nil {
		return err
	}
	a.limits.drop(id)
	a.unwatchCamera(id)
	a.tellRemoved(id)
	a.live.hub.Remove(id)
	a.returnMemory(torn) // app/release.go
	return nil
}

// Wait blocks until every stream added so far has ended (files at their end) and its results
// went out, or ctx ends.
func (a *App) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { a.Pipeline.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Subscribe returns a channel of encoded results (JSON objects) for live consumers (SSE,
// WebSocket); slow subscribers lose messages (counted) rather than slowing the pipeline.
func (a *App) Subscribe(s defs.Subscription) (<-chan []byte, func()) { return a.fanout.subscribe(s) }

// LatestFrame returns a stream's most recent decoded frame (Options.KeepLatest) with a
// reference the caller must Release, or nil.
func (a *App) LatestFrame(id string) *frame.Frame { return a.Pipeline.LatestFrame(id) }

// Stop stops every stream, drains the pipeline, closes the sinks and frees the models. It
// returns the first sink error.
func (a *App) Stop() error { return a.StopWithin(0) }

// StopWithin is Stop with the frames' drain bounded (pipeline.StopWithin).
func (a *App) StopWithin(drain time.Duration) error {
	a.failed.stop()
	a.unwatchCamera("")
	a.overloadEnd()
	err := a.Pipeline.StopWithin(drain)
	a.live.srv.Close()
	a.stopGB28181()
	if cerr := a.closeSinks(); err == nil {
		err = cerr
	}
	a.Registry.Close()
	a.gpuMem.close()
	a.decPools.close() // app/decpool.go: the streams gave theirs back as the pipeline stopped
	if gerr := a.Devices.Close(); err == nil {
		err = gerr
	}
	return err
}

func (a *App) closeSinks() error {
	a.sinksMu.Lock()
	sinks := a.sinks
	a.sinks = nil
	a.sinksMu.Unlock()
	var errs []error
	for _, s := range sinks {
		if c, ok := s.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}

// NewEventsSink declares a jsonl sink of scene events to path ("-": stdout).
func NewEventsSink(path string) config.Sink {
	return config.NewSink("jsonl", map[string]any{"path": path, "carry": "events"})
}

// checkClasses checks the class names of a stream's zones, lines, groups, filters and masks
// against its model's labels and its groups (loading the model if it is not yet: the stream
// would load it next anyway).
func (a *App) checkClasses(s *config.Stream) error {
	named := len(s.Groups) > 0 || len(s.Filters) > 0 || len(s.Masks) > 0
	for _, z := range s.Zones {
		named = named || len(z.Classes) > 0
	}
	for _, l := range s.Lines {
		named = named || len(l.Classes) > 0
	}
	if !named || s.OnGPU() {
		return nil
	}
	e, err := a.Registry.Get(s.Model)
	if err != nil || e.Current() == nil {
		return nil // the pipeline reports the model's error
	}
	labels := e.Current().Labels()
	return errors.Join(s.Rules.Check(labels), s.Config.Check(0, 0, s.Rules.Names(labels)))
}
