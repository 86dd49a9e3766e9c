package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/preprocess/gpu"
)

// yoloxSpec is YOLOX-Nano's preprocessing (assets/MANIFEST.md): BGR, 0-255, top-left letterbox
// on 114 padding.
var yoloxSpec = preprocess.Spec{Width: 416, Height: 416, Color: preprocess.BGR, Resize: preprocess.Letterbox,
	Align: preprocess.TopLeft, Interp: preprocess.Bilinear, Pad: 114, Scale: 1, Std: [3]float32{1, 1, 1}}

// item is a decoded frame on its way to a GPU worker.
type item struct {
	f       *frame.Frame
	ready   *cuda.Event // recorded on the decoder's stream after the frame was mapped
	arrival time.Time   // when its access unit was handed to the decoder
	decoded time.Time   // when the decoder emitted it (after any B-frame reordering)
}

// engine runs inference for one GPU worker on its stream, on one of the worker's input sets
// (batch tensors of maxBatch [3,416,416] float32 slots).
type engine interface {
	// Infer queues the model on the first n slots of input set k and the copy of its first
	// output to host memory, on s; without -async it also waits for the model to finish.
	Infer(s *cuda.Stream, k, n int) error
	Close() error
}

// newEngine builds a worker's engine (set by the ORT file when inference is compiled in).
var newEngine func(cfg config, d *cuda.Device, s *cuda.Stream, inputs []cuda.Ptr, maxBatch int) (engine, error)

type pipelineResult struct {
	Mode       string  `json:"mode"`
	Device     string  `json:"device"`
	GPUs       int     `json:"gpus"`
	Streams    int     `json:"streams"`
	Paced      bool    `json:"paced"`
	OfferedFPS float64 `json:"offered_fps,omitempty"`
	Batch      int     `json:"max_batch"`
	Workers    int     `json:"workers_per_gpu"`
	Depth      int     `json:"batches_in_flight_per_worker"`
	Async      bool    `json:"async"`
	Graph      bool    `json:"cuda_graph"`
	DecFrames  int     `json:"decoder_frames"`
	IdleFrac   float64 `json:"worker_idle_fraction"`
	LaunchMs   float64 `json:"worker_launch_ms_per_batch"`
	Half       bool    `json:"half"`
	Clip       string  `json:"clip"`
	Frames     int64   `json:"frames"`
	Seconds    float64 `json:"seconds"`
	FPS        float64 `json:"fps"`
	SteadyFPS  float64 `json:"steady_fps,omitempty"`
	MeanBatch  float64 `json:"mean_batch"`
	P50ms      float64 `json:"latency_p50_ms"`
	P99ms      float64 `json:"latency_p99_ms"`
	MaxMs      float64 `json:"latency_max_ms"`
	PipeP50ms  float64 `json:"after_decoder_p50_ms"`
	PipeP99ms  float64 `json:"after_decoder_p99_ms"`
	HtoDPerFrm float64 `json:"htod_copies_per_frame"`
	DtoHPerFrm float64 `json:"dtoh_copies_per_frame"`
	DtoHBytes  float64 `json:"dtoh_bytes_per_frame"`
	Allocs     uint64  `json:"device_allocs_during_run"`
	Rebinds    uint64  `json:"context_rebinds"`
	MemUsedMB  float64 `json:"device_mem_used_mb"`
}

// benchPipeline runs decode -> preprocess (-> inference) with N streams feeding per-GPU workers
// that batch frames across streams. Unpaced with repeat 0, the streams loop the clip for
// cfg.duration and steady_fps counts the frames finished between cfg.settle and cfg.duration.
func benchPipeline(cfg config, infer bool) (*pipelineResult, error) {
	if infer && newEngine == nil {
		return nil, fmt.Errorf("inference is not compiled into this binary")
	}
	c, err := loadClip(cfg.clip, cfg.fps)
	if err != nil {
		return nil, err
	}
	devs, err := openDevices()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// GPU workers: started (module loaded, buffers and sessions created, warmed) before any
	// stream, so nothing is created on the frame path.
	queues := make([]chan item, len(devs))
	var completed atomic.Int64
	var ws []*worker
	var wwg sync.WaitGroup
	ready := make(chan error)
	for di, d := range devs {
		queues[di] = make(chan item, 4*cfg.batch*cfg.workers)
		for range cfg.workers {
			w := &worker{cfg: cfg, dev: d, in: queues[di], infer: infer, completed: &completed}
			ws = append(ws, w)
			wwg.Add(1)
			go func() { defer wwg.Done(); w.run(ctx, ready) }()
		}
	}
	for range ws {
		if err := <-ready; err != nil {
			return nil, err
		}
	}
	before := cuda.ReadStats()
	t0 := time.Now()
	for _, w := range ws {
		w.settle = t0.Add(cfg.settle) // set before any frame exists
	}
	var swg sync.WaitGroup
	errs := make([]error, cfg.streams)
	var sent atomic.Int64
	for i := range cfg.streams {
		swg.Add(1)
		go func() {
			defer swg.Done()
			d := devs[i%len(devs)]
			// Paced streams are spread over one frame interval, as cameras are not in phase.
			phase := time.Duration(float64(time.Second) / cfg.fps * float64(i) / float64(cfg.streams))
			errs[i] = feedStream(ctx, cfg, d, c, queues[i%len(devs)], t0.Add(phase), &sent)
		}()
	}
	var steady float64
	if !cfg.paced && cfg.repeat == 0 {
		steady = window(t0, cfg.settle, cfg.duration, &completed)
	}
	swg.Wait()
	for _, q := range queues {
		close(q)
	}
	wwg.Wait()
	el := time.Since(t0).Seconds()
	st := cuda.ReadStats().Sub(before)
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("stream %d: %w", i, err)
		}
	}
	res := &pipelineResult{Mode: "pre", Device: devs[0].String(), Clip: filepath.Base(cfg.clip), GPUs: len(devs), Streams: cfg.streams, Paced: cfg.paced,
		Batch: cfg.batch, Workers: cfg.workers, Half: cfg.half, Seconds: el, Rebinds: st.Rebinds,
		Depth: cfg.depth, Async: cfg.async && infer, Graph: *graph && infer, DecFrames: cfg.decFrames}
	if infer {
		res.Mode = "e2e"
	}
	if cfg.paced {
		res.OfferedFPS = cfg.fps * float64(cfg.streams)
	}
	var lat, plat []float64
	var batches int64
	for _, w := range ws {
		if w.err != nil {
			return nil, w.err
		}
		res.Frames += w.frames
		batches += w.batches
		lat = append(lat, w.lat...)
		plat = append(plat, w.plat...)
		res.IdleFrac += w.idle.Seconds() / el / float64(len(ws))
		res.LaunchMs += float64(w.launch.Milliseconds())
	}
	res.LaunchMs /= float64(max(1, batches))
	if res.Frames == 0 {
		return nil, fmt.Errorf("no frames processed")
	}
	res.FPS = float64(res.Frames) / el
	res.SteadyFPS = steady
	res.MeanBatch = float64(res.Frames) / float64(batches)
	slices.Sort(lat)
	res.P50ms, res.P99ms, res.MaxMs = pct(lat, 0.50), pct(lat, 0.99), lat[len(lat)-1]
	slices.Sort(plat)
	res.PipeP50ms, res.PipeP99ms = pct(plat, 0.50), pct(plat, 0.99)
	n := float64(res.Frames)
	res.HtoDPerFrm, res.DtoHPerFrm, res.DtoHBytes = float64(st.HtoD)/n, float64(st.DtoH)/n, float64(st.DtoHBytes)/n
	res.Allocs = st.DeviceAllocs + st.PoolAllocs
	free, total, _ := devs[0].MemInfo()
	res.MemUsedMB = float64(total-free) / (1 << 20)
	return res, nil
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// feedStream decodes the clip on its own locked thread and stream and hands each frame to the
// device's workers with an event marking when it is ready. Paced: access units are released at
// the clip's frame rate for cfg.duration; else the clip is replayed cfg.repeat times at once.
func feedStream(ctx context.Context, cfg config, d *cuda.Device, c *clip, out chan<- item, t0 time.Time, sent *atomic.Int64) error {
	return d.RunLocked(func() error {
		s, err := d.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		dec := &codec.NVDEC{Device: d, Stream: s, Codec: c.aus[0].Codec, Frames: cfg.decFrames}
		if err := dec.Init(); err != nil {
			return err
		}
		defer dec.Close()
		events := map[*frame.Frame]*cuda.Event{}
		defer func() {
			// Frames may still sit in a worker's queue: their events and surfaces must outlive them.
			waitReleased(dec.Pool(), 10*time.Second)
			for _, e := range events {
				e.Destroy()
			}
		}()
		// arrival times by frame number (PTS order), a ring deep enough for B-frame reordering
		var arrivals [64]time.Time
		frameDur := time.Duration(float64(time.Second) / cfg.fps)
		emit := func(f *frame.Frame) error {
			ev := events[f]
			if ev == nil {
				var err error
				if ev, err = d.NewEvent(false); err != nil {
					f.Release()
					return err
				}
				events[f] = ev
			}
			if err := ev.Record(s); err != nil {
				f.Release()
				return err
			}
			n := int64((f.PTS + frameDur/2) / frameDur)
			select {
			case out <- item{f: f, ready: ev, arrival: arrivals[n%64], decoded: time.Now()}:
				return nil
			case <-ctx.Done():
				f.Release()
				return ctx.Err()
			}
		}
		clipLen := time.Duration(len(c.aus)) * frameDur
		var au = c.aus[0]
		for loop, idx := 0, int64(0); ; loop++ {
			if cfg.repeat > 0 && !cfg.paced && loop >= cfg.repeat {
				break
			}
			if (cfg.paced || cfg.repeat == 0) && time.Since(t0) >= cfg.duration {
				break
			}
			for i := range c.aus {
				if err := ctx.Err(); err != nil {
					return err
				}
				au = c.aus[i]
				au.PTS += time.Duration(loop) * clipLen
				if cfg.paced {
					due := t0.Add(time.Duration(idx) * frameDur)
					if w := time.Until(due); w > 0 {
						time.Sleep(w)
					}
					if time.Since(t0) >= cfg.duration {
						break
					}
				}
				n := int64((au.PTS + frameDur/2) / frameDur)
				arrivals[n%64] = time.Now()
				idx++
				sent.Add(1)
				if err := dec.Decode(ctx, &au, emit); err != nil {
					return err
				}
			}
		}
		return dec.Flush(ctx, emit)
	})
}

// waitReleased waits until every frame of pool is back, at most limit.
func waitReleased(pool *frame.Pool, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for pool.Stats().InUse > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// worker is one GPU worker: a locked OS thread with the device's context current, its own
// stream, preprocessor and inference engine, and cfg.depth input sets (batch tensor + outputs)
// so that it gathers and preprocesses batch k+1 while the GPU still runs batch k.
type worker struct {
	cfg   config
	dev   *cuda.Device
	in    <-chan item
	infer bool

	frames, batches int64
	lat             []float64 // ms, access unit to decoder -> result on the host
	plat            []float64 // ms, frame out of the decoder -> result on the host
	settle          time.Time // frames arriving before this are not in lat (decoder start-up)
	idle, launch    time.Duration
	completed       *atomic.Int64 // frames finished by every worker (nil: not counted)
	err             error
}

// inputSet is one batch in flight: its tensor, the frames in it and the event marking its end.
type inputSet struct {
	buf     *cuda.Buffer
	done    *cuda.Event
	batch   []item
	pending bool
}

func (w *worker) run(ctx context.Context, ready chan<- error) {
	defer func() {
		// After an error, keep releasing what arrives so that decoders never block on a dead worker.
		for it := range w.in {
			it.f.Release()
		}
	}()
	w.err = w.dev.RunLocked(func() error {
		var sets []inputSet
		defer func() {
			w.dev.Synchronize() // after an error, work may still read the frames
			for _, set := range sets {
				releaseAll(set.batch)
				set.done.Destroy()
				set.buf.Free(nil)
			}
		}()
		setup := func() (*cuda.Stream, *gpu.Preprocessor, engine, error) {
			s, err := w.dev.NewStream()
			if err != nil {
				return nil, nil, nil, err
			}
			pre := &gpu.Preprocessor{Device: w.dev, Spec: yoloxSpec, Half: w.cfg.half}
			if err := pre.Init(); err != nil {
				return s, nil, nil, err
			}
			var ptrs []cuda.Ptr
			for range max(1, w.cfg.depth) {
				var set inputSet
				if set.buf, err = w.dev.Alloc(w.cfg.batch * pre.SlotBytes()); err != nil {
					return s, pre, nil, err
				}
				if set.done, err = w.dev.NewEvent(false); err != nil {
					set.buf.Free(nil)
					return s, pre, nil, err
				}
				set.batch = make([]item, 0, w.cfg.batch)
				sets = append(sets, set)
				ptrs = append(ptrs, set.buf.Ptr)
			}
			if !w.infer {
				return s, pre, nil, nil
			}
			eng, err := newEngine(w.cfg, w.dev, s, ptrs, w.cfg.batch)
			if err != nil {
				return s, pre, nil, err
			}
			for range 3 { // warm-up (and CUDA graph capture) at the one shape the run uses
				for k := range sets {
					if err := eng.Infer(s, k, w.cfg.batch); err != nil {
						return s, pre, eng, err
					}
				}
			}
			return s, pre, eng, s.Synchronize()
		}
		s, pre, eng, err := setup()
		if s != nil {
			defer s.Destroy()
		}
		if pre != nil {
			defer pre.Close()
		}
		if eng != nil {
			defer eng.Close()
		}
		ready <- err
		if err != nil {
			return err
		}
		w.lat = make([]float64, 0, 1<<20)
		w.plat = make([]float64, 0, 1<<20)
		// finish waits for set k's batch and releases its frames.
		finish := func(k int) error {
			set := &sets[k]
			if !set.pending {
				return nil
			}
			set.pending = false
			if err := set.done.Synchronize(); err != nil {
				return err
			}
			now := time.Now()
			for _, it := range set.batch {
				it.f.Release()
				if len(w.lat) < cap(w.lat) && !it.arrival.Before(w.settle) {
					w.lat = append(w.lat, float64(now.Sub(it.arrival).Microseconds())/1000)
					w.plat = append(w.plat, float64(now.Sub(it.decoded).Microseconds())/1000)
				}
			}
			w.frames += int64(len(set.batch))
			w.batches++
			if w.completed != nil {
				w.completed.Add(int64(len(set.batch)))
			}
			set.batch = set.batch[:0]
			return nil
		}
		finishAll := func() error {
			for k := range sets {
				if err := finish(k); err != nil {
					return err
				}
			}
			return nil
		}
		for k := 0; ; k = (k + 1) % len(sets) {
			if err := finish(k); err != nil { // its buffers are reused now
				return err
			}
			// Wait for frames; finish in-flight batches first rather than sit on their results.
			var it item
			var ok bool
			select {
			case it, ok = <-w.in:
			default:
				if err := finishAll(); err != nil {
					return err
				}
				t := time.Now()
				it, ok = <-w.in
				w.idle += time.Since(t)
			}
			if !ok {
				return finishAll()
			}
			set := &sets[k]
			set.batch = append(set.batch, it)
		fill:
			for len(set.batch) < w.cfg.batch {
				select {
				case it, ok := <-w.in:
					if !ok {
						break fill
					}
					set.batch = append(set.batch, it)
				default:
					break fill
				}
			}
			t := time.Now()
			set.pending = true // its frames are released by finish, also after an error
			for i, it := range set.batch {
				if err := s.Wait(it.ready); err != nil {
					return err
				}
				if _, err := pre.Run(s, it.f, set.buf.Ptr, i); err != nil {
					return err
				}
			}
			if eng != nil {
				// Always the full batch shape: slots past len(batch) hold stale data whose
				// results are ignored. A fixed shape keeps ORT from re-planning per size
				// (and is what a captured CUDA graph replays).
				if err := eng.Infer(s, k, w.cfg.batch); err != nil {
					return err
				}
			}
			if err := set.done.Record(s); err != nil {
				return err
			}
			w.launch += time.Since(t)
		}
	})
}

func releaseAll(batch []item) {
	for _, it := range batch {
		it.f.Release()
	}
}
