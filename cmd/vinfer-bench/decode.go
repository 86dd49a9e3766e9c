package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
)

// openDevices opens every visible GPU (a retained primary context each).
func openDevices() ([]*cuda.Device, error) {
	n, err := cuda.DeviceCount()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, cuda.ErrNoDevice
	}
	devs := make([]*cuda.Device, n)
	for i := range devs {
		if devs[i], err = cuda.Open(i); err != nil {
			return nil, err
		}
	}
	return devs, nil
}

type decodeResult struct {
	Mode        string  `json:"mode"`
	Device      string  `json:"device"`
	GPUs        int     `json:"gpus"`
	Streams     int     `json:"streams"`
	Frames      int64   `json:"frames"`
	Seconds     float64 `json:"seconds"`
	FPS         float64 `json:"fps"`
	PerStream   float64 `json:"fps_per_stream"`
	SteadyFPS   float64 `json:"steady_fps,omitempty"`
	HtoDPerFrm  float64 `json:"htod_copies_per_frame"`
	DtoHPerFrm  float64 `json:"dtoh_copies_per_frame"`
	DeviceAlloc uint64  `json:"device_allocs_during_run"`
}

// benchDecode decodes the clip repeat times (0: in a loop for cfg.duration) on each of N
// streams at once, frames released as soon as they come out (they stay in device memory: no
// download). steady_fps counts the frames decoded between cfg.settle and cfg.duration only
// (all streams running, decoders created).
func benchDecode(cfg config) (*decodeResult, error) {
	c, err := loadClip(cfg.clip, cfg.fps)
	if err != nil {
		return nil, err
	}
	devs, err := openDevices()
	if err != nil {
		return nil, err
	}
	// Warm-up: one short decode per device so driver and NVDEC initialization stay out of the
	// measured interval.
	for _, d := range devs {
		if _, err := decodeStream(d, c, 1, 30, nil, nil, nil); err != nil {
			return nil, err
		}
	}
	var wg sync.WaitGroup
	counts := make([]int64, cfg.streams)
	errs := make([]error, cfg.streams)
	start := make(chan struct{})
	before := cuda.ReadStats()
	var stop atomic.Bool
	var decoded atomic.Int64
	for i := range cfg.streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[i], errs[i] = decodeStream(devs[i%len(devs)], c, cfg.repeat, 0, start, &stop, &decoded)
		}()
	}
	t0 := time.Now()
	close(start)
	var steady float64
	if cfg.repeat == 0 {
		steady = window(t0, cfg.settle, cfg.duration, &decoded)
		stop.Store(true)
	}
	wg.Wait()
	el := time.Since(t0).Seconds()
	st := cuda.ReadStats().Sub(before)
	var total int64
	for i := range counts {
		if errs[i] != nil {
			return nil, fmt.Errorf("stream %d: %w", i, errs[i])
		}
		total += counts[i]
	}
	return &decodeResult{Mode: "decode", Device: devs[0].String(), GPUs: len(devs), Streams: cfg.streams, Frames: total,
		Seconds: el, FPS: float64(total) / el, PerStream: float64(total) / el / float64(cfg.streams), SteadyFPS: steady,
		HtoDPerFrm: float64(st.HtoD) / float64(total), DtoHPerFrm: float64(st.DtoH) / float64(total),
		DeviceAlloc: st.DeviceAllocs + st.PoolAllocs}, nil
}

// decodeStream decodes the clip repeat times (limit > 0: only the first limit units) on its own
// locked thread, stream and decoder, and returns the frames decoded.
// With repeat 0 it loops until stop; decoded counts every frame as it comes out.
func decodeStream(d *cuda.Device, c *clip, repeat, limit int, start <-chan struct{}, stop *atomic.Bool, decoded *atomic.Int64) (int64, error) {
	var n int64
	err := d.RunLocked(func() error {
		s, err := d.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		dec := &codec.NVDEC{Device: d, Stream: s, Codec: c.aus[0].Codec, Frames: 4}
		if err := dec.Init(); err != nil {
			return err
		}
		defer dec.Close()
		if start != nil {
			<-start
		}
		emit := func(f *frame.Frame) error {
			n++
			if decoded != nil {
				decoded.Add(1)
			}
			f.Release()
			return nil
		}
		ctx := context.Background()
		aus := c.aus
		if limit > 0 && limit < len(aus) {
			aus = aus[:limit]
		}
		for loop := 0; repeat == 0 && !stop.Load() || loop < repeat; loop++ {
			for i := range aus {
				if err := dec.Decode(ctx, &aus[i], emit); err != nil {
					return err
				}
			}
		}
		if err := dec.Flush(ctx, emit); err != nil {
			return err
		}
		return s.Synchronize()
	})
	return n, err
}

// window waits until t0+settle, then until t0+end, and returns the rate at which counter grew
// in between (per second).
func window(t0 time.Time, settle, end time.Duration, counter *atomic.Int64) float64 {
	time.Sleep(time.Until(t0.Add(settle)))
	n0, t1 := counter.Load(), time.Now()
	time.Sleep(time.Until(t0.Add(end)))
	return float64(counter.Load()-n0) / time.Since(t1).Seconds()
}
