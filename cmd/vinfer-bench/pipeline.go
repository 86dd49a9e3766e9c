package main

import (
	"context"
	"fmt"
	"math"
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
}

// engine runs inference for one GPU worker on its stream: input is the worker's batch tensor.
type engine interface {
	// Infer queues the model on the first n slots of the input and the copy of the outputs
	// to host memory, on s.
	Infer(s *cuda.Stream, n int) error
	Close() error
}

// newEngine builds a worker's engine (set by the ORT file when inference is compiled in).
var newEngine func(cfg config, d *cuda.Device, s *cuda.Stream, input cuda.Ptr, maxBatch int) (engine, error)

type pipelineResult struct {
	Mode       string  `json:"mode"`
	Device     string  `json:"device"`
	GPUs       int     `json:"gpus"`
	Streams    int     `json:"streams"`
	Paced      bool    `json:"paced"`
	OfferedFPS float64 `json:"offered_fps,omitempty"`
	Batch      int     `json:"max_batch"`
	Workers    int     `json:"workers_per_gpu"`
	Half       bool    `json:"half"`
	Frames     int64   `json:"frames"`
	Seconds    float64 `json:"seconds"`
	FPS        float64 `json:"fps"`
	MeanBatch  float64 `json:"mean_batch"`
	P50ms      float64 `json:"latency_p50_ms"`
	P99ms      float64 `json:"latency_p99_ms"`
	MaxMs      float64 `json:"latency_max_ms"`
	HtoDPerFrm float64 `json:"htod_copies_per_frame"`
	DtoHPerFrm float64 `json:"dtoh_copies_per_frame"`
	DtoHBytes  float64 `json:"dtoh_bytes_per_frame"`
	Allocs     uint64  `json:"device_allocs_during_run"`
	Rebinds    uint64  `json:"context_rebinds"`
	MemUsedMB  float64 `json:"device_mem_used_mb"`
}

// benchPipeline runs decode -> preprocess (-> inference) with N streams feeding per-GPU workers
// that batch frames across streams.
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
	var ws []*worker
	var wwg sync.WaitGroup
	ready := make(chan error)
	for di, d := range devs {
		queues[di] = make(chan item, 4*cfg.batch*cfg.workers)
		for range cfg.workers {
			w := &worker{cfg: cfg, dev: d, in: queues[di], infer: infer}
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
			errs[i] = feedStream(ctx, cfg, d, c, queues[i%len(devs)], t0, &sent)
		}()
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
	res := &pipelineResult{Mode: "pre", Device: devs[0].String(), GPUs: len(devs), Streams: cfg.streams, Paced: cfg.paced,
		Batch: cfg.batch, Workers: cfg.workers, Half: cfg.half, Seconds: el, Rebinds: st.Rebinds}
	if infer {
		res.Mode = "e2e"
	}
	if cfg.paced {
		res.OfferedFPS = cfg.fps * float64(cfg.streams)
	}
	var lat []float64
	var batches int64
	for _, w := range ws {
		if w.err != nil {
			return nil, w.err
		}
		res.Frames += w.frames
		batches += w.batches
		lat = append(lat, w.lat...)
	}
	if res.Frames == 0 {
		return nil, fmt.Errorf("no frames processed")
	}
	res.FPS = float64(res.Frames) / el
	res.MeanBatch = float64(res.Frames) / float64(batches)
	slices.Sort(lat)
	res.P50ms, res.P99ms, res.MaxMs = pct(lat, 0.50), pct(lat, 0.99), lat[len(lat)-1]
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
		dec := &codec.NVDEC{Device: d, Stream: s, Codec: c.aus[0].Codec, Frames: 6}
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
			case out <- item{f: f, ready: ev, arrival: arrivals[n%64]}:
				return nil
			case <-ctx.Done():
				f.Release()
				return ctx.Err()
			}
		}
		clipLen := time.Duration(len(c.aus)) * frameDur
		var au = c.aus[0]
		for loop, idx := 0, int64(0); ; loop++ {
			if !cfg.paced && loop >= cfg.repeat {
				break
			}
			if cfg.paced && time.Since(t0) >= cfg.duration {
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
// stream, batch tensor, preprocessor and inference engine.
type worker struct {
	cfg   config
	dev   *cuda.Device
	in    <-chan item
	infer bool

	frames, batches int64
	lat             []float64 // ms
	settle          time.Time // frames arriving before this are not in lat (decoder start-up)
	err             error
}

func (w *worker) run(ctx context.Context, ready chan<- error) {
	defer func() {
		// After an error, keep releasing what arrives so that decoders never block on a dead worker.
		for it := range w.in {
			it.f.Release()
		}
	}()
	w.err = w.dev.RunLocked(func() error {
		setup := func() (*cuda.Stream, *gpu.Preprocessor, *cuda.Buffer, engine, error) {
			s, err := w.dev.NewStream()
			if err != nil {
				return nil, nil, nil, nil, err
			}
			pre := &gpu.Preprocessor{Device: w.dev, Spec: yoloxSpec, Half: w.cfg.half}
			if err := pre.Init(); err != nil {
				return nil, nil, nil, nil, err
			}
			buf, err := w.dev.Alloc(w.cfg.batch * pre.SlotBytes())
			if err != nil {
				return nil, nil, nil, nil, err
			}
			var eng engine
			if w.infer {
				if eng, err = newEngine(w.cfg, w.dev, s, buf.Ptr, w.cfg.batch); err != nil {
					return nil, nil, nil, nil, err
				}
				for range 3 { // warm-up at the one shape the run uses
					if err := eng.Infer(s, w.cfg.batch); err != nil {
						return nil, nil, nil, nil, err
					}
				}
				if err := s.Synchronize(); err != nil {
					return nil, nil, nil, nil, err
				}
			}
			return s, pre, buf, eng, nil
		}
		s, pre, buf, eng, err := setup()
		ready <- err
		if err != nil {
			return err
		}
		defer s.Destroy()
		defer pre.Close()
		defer buf.Free(nil)
		if eng != nil {
			defer eng.Close()
		}
		w.lat = make([]float64, 0, 1<<20)
		batch := make([]item, 0, w.cfg.batch)
		for {
			it, ok := <-w.in
			if !ok {
				return nil
			}
			batch = append(batch[:0], it)
		fill:
			for len(batch) < w.cfg.batch {
				select {
				case it, ok := <-w.in:
					if !ok {
						break fill
					}
					batch = append(batch, it)
				default:
					break fill
				}
			}
			for i, it := range batch {
				if err := s.Wait(it.ready); err != nil {
					releaseAll(batch)
					return err
				}
				if _, err := pre.Run(s, it.f, buf.Ptr, i); err != nil {
					releaseAll(batch)
					return err
				}
			}
			if eng != nil {
				// Always the full batch shape: slots past len(batch) hold stale data whose
				// results are ignored. A fixed shape keeps ORT from re-planning per size.
				if err := eng.Infer(s, w.cfg.batch); err != nil {
					releaseAll(batch)
					return err
				}
			}
			if err := s.Synchronize(); err != nil {
				releaseAll(batch)
				return err
			}
			now := time.Now()
			for _, it := range batch {
				it.f.Release()
				if len(w.lat) < cap(w.lat) && !it.arrival.Before(w.settle) {
					w.lat = append(w.lat, float64(now.Sub(it.arrival).Microseconds())/1000)
				}
			}
			w.frames += int64(len(batch))
			w.batches++
		}
	})
}

func releaseAll(batch []item) {
	for _, it := range batch {
		it.f.Release()
	}
}
