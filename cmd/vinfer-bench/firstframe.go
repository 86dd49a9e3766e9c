package main

import (
	"context"
	"flag"
	"slices"
	"sync"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/preprocess/gpu"
)

var variant = flag.String("variant", "cold", "firstframe: cold (no warm-up) | warm (context, module and decoder warmed at start) | ownctx (a cuCtxCreate per worker, the pattern vinfer avoids)")

type firstFrameResult struct {
	Mode    string    `json:"mode"`
	Variant string    `json:"variant"`
	Workers int       `json:"workers"`
	WarmMs  float64   `json:"warmup_ms,omitempty"`
	MeanMs  float64   `json:"first_frame_mean_ms"`
	MaxMs   float64   `json:"first_frame_max_ms"`
	MinMs   float64   `json:"first_frame_min_ms"`
	All     []float64 `json:"first_frame_ms"`
	// Phases is the mean time of each step across workers, in milliseconds.
	Phases map[string]float64 `json:"phase_mean_ms,omitempty"`
}

// phaseNames are the steps of firstFrame, in order.
var phaseNames = []string{"open_device", "stream", "preprocessor", "decoder", "decode_first", "preprocess_sync"}

// benchFirstFrame starts N workers at once; each opens the device, makes a stream, a decoder
// and a preprocessor, decodes the clip until its first picture and preprocesses it. The latency
// is from the common start to the preprocessed tensor being ready on the device. Run each
// variant in a fresh process: the first one to touch the driver pays its start-up.
func benchFirstFrame(cfg config) (*firstFrameResult, error) {
	c, err := loadClip(cfg.clip, cfg.fps)
	if err != nil {
		return nil, err
	}
	res := &firstFrameResult{Mode: "firstframe", Variant: *variant, Workers: cfg.streams}
	if *variant == "warm" {
		t := time.Now()
		d, err := cuda.Open(0) // retains the primary context
		if err != nil {
			return nil, err
		}
		defer d.Close()
		if _, err := firstFrame(c, nil); err != nil { // module JIT, NVDEC library, allocator
			return nil, err
		}
		res.WarmMs = ms(time.Since(t))
	}
	start := make(chan struct{})
	lat := make([]float64, cfg.streams)
	phases := make([][6]time.Duration, cfg.streams)
	errs := make([]error, cfg.streams)
	var wg sync.WaitGroup
	for i := range cfg.streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			t := time.Now()
			if *variant == "ownctx" {
				errs[i] = ownContextWorker()
			} else {
				_, errs[i] = firstFrame(c, &phases[i])
			}
			lat[i] = ms(time.Since(t))
		}()
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	if *variant != "ownctx" {
		res.Phases = map[string]float64{}
		for _, p := range phases {
			for k, name := range phaseNames {
				res.Phases[name] += ms(p[k]) / float64(len(phases))
			}
		}
	}
	res.All = slices.Clone(lat)
	slices.Sort(lat)
	res.MinMs, res.MaxMs = lat[0], lat[len(lat)-1]
	for _, v := range lat {
		res.MeanMs += v / float64(len(lat))
	}
	return res, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// firstFrame runs one worker's path up to its first preprocessed frame, recording the time of
// each step in phases when not nil.
func firstFrame(c *clip, phases *[6]time.Duration) (time.Duration, error) {
	t := time.Now()
	last := t
	mark := func(i int) {
		if phases != nil {
			now := time.Now()
			phases[i] = now.Sub(last)
			last = now
		}
	}
	d, err := cuda.Open(0)
	mark(0)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	err = d.RunLocked(func() error {
		s, err := d.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		mark(1)
		pre := &gpu.Preprocessor{Device: d, Spec: yoloxSpec}
		if err := pre.Init(); err != nil {
			return err
		}
		defer pre.Close()
		buf, err := d.Alloc(pre.SlotBytes())
		if err != nil {
			return err
		}
		defer buf.Free(nil)
		mark(2)
		dec := &codec.NVDEC{Device: d, Stream: s, Codec: c.aus[0].Codec, Frames: 2}
		if err := dec.Init(); err != nil {
			return err
		}
		defer dec.Close()
		mark(3)
		var got *frame.Frame
		keep := func(f *frame.Frame) error {
			if got == nil {
				got = f
			} else {
				f.Release()
			}
			return nil
		}
		for i := 0; got == nil && i < len(c.aus); i++ {
			if err := dec.Decode(context.Background(), &c.aus[i], keep); err != nil {
				return err
			}
		}
		if got == nil {
			if err := dec.Flush(context.Background(), keep); err != nil {
				return err
			}
		}
		defer got.Release()
		mark(4)
		if _, err := pre.Run(s, got, buf.Ptr, 0); err != nil {
			return err
		}
		err = s.Synchronize()
		mark(5)
		return err
	})
	return time.Since(t), err
}

// ownContextWorker is the seed's pattern: a context created by each worker (cuCtxCreate), one
// allocation, destroyed at the end. The time includes only context creation and first use.
func ownContextWorker() error {
	d, err := cuda.Open(0)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.RunLocked(func() error {
		c, err := d.CreateOwnContext()
		if err != nil {
			return err
		}
		defer c.Destroy()
		return nil
	})
}
