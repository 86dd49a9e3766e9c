package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/sink"
)

type e2eResult struct {
	Mode       string  `json:"mode"`
	Decoder    string  `json:"decoder"`
	Provider   string  `json:"provider"`
	Device     string  `json:"device,omitempty"`
	GPUs       int     `json:"gpus"`
	Streams    int     `json:"streams"`
	Paced      bool    `json:"paced"`
	OfferedFPS float64 `json:"offered_fps,omitempty"`
	Model      string  `json:"model"`
	Batch      int     `json:"max_batch"`
	Workers    int     `json:"workers_per_gpu"`
	Depth      int     `json:"batches_in_flight_per_worker"`
	Graph      bool    `json:"cuda_graph"`
	DecFrames  int     `json:"decoder_frames"`
	Clip       string  `json:"clip"`
	Frames     int64   `json:"frames"`
	Seconds    float64 `json:"seconds"`
	FPS        float64 `json:"fps"`
	SteadyFPS  float64 `json:"steady_fps"`
	MeanBatch  float64 `json:"mean_batch"`
	P50ms      float64 `json:"latency_p50_ms"`
	P99ms      float64 `json:"latency_p99_ms"`
	MaxMs      float64 `json:"latency_max_ms"`
	PipeP50ms  float64 `json:"after_decoder_p50_ms"`
	PipeP99ms  float64 `json:"after_decoder_p99_ms"`
	Dropped    int64   `json:"dropped"`
	HtoDPerFrm float64 `json:"htod_copies_per_frame"`
	DtoHPerFrm float64 `json:"dtoh_copies_per_frame"`
	DtoHBytes  float64 `json:"dtoh_bytes_per_frame"`
	Allocs     uint64  `json:"device_allocs_during_run"`
	Rebinds    uint64  `json:"context_rebinds"`
	MemUsedMB  float64 `json:"device_mem_used_mb,omitempty"`
}

// benchConfig is the configuration `vinfer run` would be given: the model (name m) with the
// bench's settings and streams streams s000… of the clip through the bench's probes (added by
// benchE2E), realtime (paced at the clip's rate, live: drop oldest) with o.paced. It goes through config.Parse, so it is validated as a user's file is.
func benchConfig(o options, streams int) (*config.Config, error) {
	path, err := filepath.Abs(o.model)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "models:\n  - name: m\n    path: %s\n    provider: %s\n    max_batch: %d\n    max_delay: %s\n",
		strconv.Quote(path), o.provider, o.batch, o.maxDelay)
	if o.provider != "cpu" {
		nhwc := ""
		if o.nhwc != "" {
			nhwc = ", prefer_nhwc: " + strconv.Quote(o.nhwc)
		}
		fmt.Fprintf(&b, "    provider_options: {cudnn_conv_algo_search: %s%s}\n", o.cudnn, nhwc)
	}
	if o.precision != "" {
		fmt.Fprintf(&b, "    precision: %s\n", o.precision)
	}
	if o.workers > 0 {
		fmt.Fprintf(&b, "    workers: %d\n", o.workers)
	}
	if o.inflight > 0 {
		fmt.Fprintf(&b, "    inflight: %d\n", o.inflight)
	}
	if !o.graph {
		b.WriteString("    cuda_graph: false\n")
	}
	if o.input != "" {
		w, h, ok := strings.Cut(o.input, "x")
		if !ok {
			return nil, fmt.Errorf("-input %q: give WxH", o.input)
		}
		fmt.Fprintf(&b, "    input: {width: %s, height: %s}\n", w, h)
	}
	if o.score > 0 {
		fmt.Fprintf(&b, "    score_threshold: %g\n", o.score)
	}
	b.WriteString("streams:\n")
	for i := range streams {
		fmt.Fprintf(&b, "  - {id: s%03d, source: \"bench://s%03d\", model: m, decoder: %s, loop: true, realtime: %t}\n",
			i, i, o.decoder, o.paced)
	}
	cfg, err := config.Parse([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("bench configuration: %w\n%s", err, b.String())
	}
	cfg.Dir, _ = os.Getwd()
	return cfg, nil
}

// counter is the e2e run's sink and observer: it counts results and batches and keeps the
// latencies of the results after the settle time (one goroutine writes, as the pipeline's
// output does; read after Stop).
type counter struct {
	frames, batches, items atomic.Int64
	settle                 time.Time
	probes                 map[string]*probe
	lat, plat              []float64 // ms: from the unit's arrival; from the decoder's output
}

func (c *counter) Write(r *sink.Result) error {
	now := time.Now()
	c.frames.Add(1)
	if now.After(c.settle) && len(c.plat) < cap(c.plat) {
		c.plat = append(c.plat, ms(r.Latency))
	}
	if p := c.probes[r.Stream]; p != nil && len(c.lat) < cap(c.lat) {
		if at := p.arrival(r.PTS); !at.IsZero() && at.After(c.settle) {
			c.lat = append(c.lat, ms(now.Sub(at)))
		}
	}
	return nil
}

func (c *counter) ObserveBatch(_ string, n int) { c.batches.Add(1); c.items.Add(int64(n)) }
func (c *counter) ObserveResult(*sink.Result)   {}

// benchE2E runs the product's app with o.streams file streams of the clip (the configuration of
// benchConfig) for o.duration, results counted by a sink; streams start spread over one frame
// interval, as cameras are not in phase (paced streams keep their phase: realtime files). The
// model is loaded before the first stream starts (nvdec: its GPU engine on every GPU).
func benchE2E(o options) (*e2eResult, error) {
	cfg, err := benchConfig(o, o.streams)
	if err != nil {
		return nil, err
	}
	clip, err := filepath.Abs(o.clip)
	if err != nil {
		return nil, err
	}
	c := &counter{probes: map[string]*probe{}, lat: make([]float64, 0, 1<<22), plat: make([]float64, 0, 1<<22)}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := app.New(ctx, cfg, app.Options{Sinks: []sink.Sink{c}, Observer: c, Log: log})
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			a.Stop()
		}
	}()
	if o.decoder != "nvdec" {
		if err := a.Registry.Preload(true); err != nil {
			return nil, err
		}
	} else {
		n, err := cuda.DeviceCount()
		if err != nil {
			return nil, err
		}
		for ord := range n {
			if _, err := a.Registry.GetDevice("m", ord); err != nil {
				return nil, err
			}
		}
	}
	before := cuda.ReadStats()
	t0 := time.Now()
	c.settle = t0.Add(o.settle)
	frameDur := time.Duration(float64(time.Second) / o.fps)
	for i, s := range cfg.Streams {
		phase := frameDur * time.Duration(i) / time.Duration(len(cfg.Streams))
		c.probes[s.ID], _ = newProbe(s.ID, clip, o.fps, t0.Add(phase))
	}
	for _, s := range cfg.Streams {
		if err := a.AddStream(s); err != nil {
			return nil, err
		}
	}
	steady := window(t0, o.settle, o.duration, &c.frames)
	for deadline := time.Now().Add(time.Minute); c.frames.Load() < o.minFrames && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	res := &e2eResult{Mode: "e2e", Decoder: o.decoder, Provider: o.provider, Streams: o.streams, Paced: o.paced,
		Model: o.model, Clip: o.clip, DecFrames: codec.DefaultNVDECFrames, SteadyFPS: steady}
	if gs := a.GPUs(); len(gs) > 0 {
		res.GPUs, res.MemUsedMB = len(gs), float64(gs[0].MemUsed)/(1<<20)
		res.Device = gs[0].Name
	}
	for _, st := range a.Pipeline.Streams() {
		res.Dropped += st.Stats.DroppedTotal()
	}
	describe(a.Registry, res)
	err = a.Stop()
	stopped = true
	el := time.Since(t0).Seconds()
	if err != nil {
		return nil, err
	}
	st := cuda.ReadStats().Sub(before)
	res.Frames, res.Seconds = c.frames.Load(), el
	if res.Frames == 0 {
		return nil, errors.New("no frame inferred")
	}
	if o.paced {
		res.OfferedFPS = o.fps * float64(o.streams)
	}
	n := float64(res.Frames)
	res.FPS = n / el
	res.MeanBatch = float64(c.items.Load()) / float64(max(c.batches.Load(), 1))
	slices.Sort(c.lat)
	slices.Sort(c.plat)
	res.P50ms, res.P99ms = pct(c.lat, 0.5), pct(c.lat, 0.99)
	if len(c.lat) > 0 {
		res.MaxMs = c.lat[len(c.lat)-1]
	}
	res.PipeP50ms, res.PipeP99ms = pct(c.plat, 0.5), pct(c.plat, 0.99)
	res.HtoDPerFrm, res.DtoHPerFrm, res.DtoHBytes = float64(st.HtoD)/n, float64(st.DtoH)/n, float64(st.DtoHBytes)/n
	res.Allocs, res.Rebinds = st.DeviceAllocs+st.PoolAllocs, st.Rebinds
	return res, nil
}

// describe fills in the engine settings of the model as loaded (GPU 0's version, else the
// host's).
func describe(reg *model.Registry, res *e2eResult) {
	if es := reg.LoadedDevices("m"); len(es) > 0 {
		if v := es[0].Acquire(); v != nil {
			if dv, ok := v.OnDevice(); ok {
				res.Batch, res.Workers, res.Depth, res.Graph = v.MaxBatch(), dv.Lanes(), dv.InFlight(), dv.CUDAGraph()
			}
			v.Release()
			return
		}
	}
	if e := reg.Loaded("m"); e != nil {
		if v := e.Acquire(); v != nil {
			res.Batch, res.Workers, res.Depth = v.MaxBatch(), 1, 1
			v.Release()
		}
	}
}
