package main

import (
	"os"

	"context"
	"fmt"
	"github.com/vinfer/vinfer/internal/memstat"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

type memoryResult struct {
	Mode       string    `json:"mode"`
	Seconds    float64   `json:"seconds"`
	MaxStreams int       `json:"max_streams"`
	Started    int       `json:"streams_started"`
	Frames     int64     `json:"frames"`
	UsedMB     []float64 `json:"device_mem_used_mb_per_interval"`
	RSSMB      []float64 `json:"host_rss_mb_per_10_intervals"`
	FirstMB    float64   `json:"after_first_interval_mb"`
	LastMB     float64   `json:"last_mb"`
	MaxMB      float64   `json:"max_mb"`
	// ByStreams is, per number of live streams, the device memory used (MB) the first and the
	// last time that count was sampled: flat memory means equal pairs.
	ByStreams map[int][2]float64 `json:"device_mb_first_last_by_streams"`
}

// benchMemory runs paced streams (decode + preprocess, + inference when compiled in) for
// cfg.duration, adding or removing a stream every second (between 1 and cfg.streams), and
// samples the device's used memory once a second.
func benchMemory(cfg config) (*memoryResult, error) {
	c, err := loadClip(cfg.clip, cfg.fps)
	if err != nil {
		return nil, err
	}
	devs, err := openDevices()
	if err != nil {
		return nil, err
	}
	d := devs[0]
	infer := newEngine != nil
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	q := make(chan item, 4*cfg.batch*cfg.workers)
	ready := make(chan error)
	var ws []*worker
	var wwg sync.WaitGroup
	for range cfg.workers {
		w := &worker{cfg: cfg, dev: d, in: q, infer: infer}
		ws = append(ws, w)
		wwg.Add(1)
		go func() { defer wwg.Done(); w.run(ctx, ready) }()
	}
	for range ws {
		if err := <-ready; err != nil {
			return nil, err
		}
	}
	res := &memoryResult{Mode: "memory", MaxStreams: cfg.streams, ByStreams: map[int][2]float64{}}
	type running struct {
		cancel context.CancelFunc
		done   chan error
	}
	var live []running
	var sent atomic.Int64
	scfg := cfg
	scfg.paced = true
	scfg.duration = 24 * time.Hour
	add := func() {
		sctx, scancel := context.WithCancel(ctx)
		r := running{cancel: scancel, done: make(chan error, 1)}
		go func() { r.done <- feedStream(sctx, scfg, d, c, q, time.Now(), &sent) }()
		live = append(live, r)
		res.Started++
	}
	stop := func(i int) error {
		live[i].cancel()
		err := <-live[i].done
		live = append(live[:i], live[i+1:]...)
		if err != nil && err != context.Canceled {
			return err
		}
		return nil
	}
	rng := rand.New(rand.NewPCG(1, 1))
	t0 := time.Now()
	for time.Since(t0) < cfg.duration {
		switch {
		case len(live) == 0, len(live) < cfg.streams && rng.IntN(2) == 0:
			add()
		default:
			if err := stop(rng.IntN(len(live))); err != nil {
				return nil, fmt.Errorf("stopping a stream: %w", err)
			}
		}
		time.Sleep(time.Second)
		free, total, err := d.MemInfo()
		if err != nil {
			return nil, err
		}
		used := float64(total-free) / (1 << 20)
		res.UsedMB = append(res.UsedMB, used)
		fl, seen := res.ByStreams[len(live)]
		if !seen {
			fl[0] = used
		}
		fl[1] = used
		res.ByStreams[len(live)] = fl
		if len(res.UsedMB)%10 == 1 {
			rss, _ := memstat.RSS()
			res.RSSMB = append(res.RSSMB, float64(rss)/(1<<20))
			fmt.Fprintf(os.Stderr, "memory: %4.0fs %2d streams, device %.0f MB used, RSS %.1f MB, %d frames\n",
				time.Since(t0).Seconds(), len(live), res.UsedMB[len(res.UsedMB)-1], float64(rss)/(1<<20), sent.Load())
		}
	}
	for len(live) > 0 {
		if err := stop(0); err != nil {
			return nil, err
		}
	}
	close(q)
	wwg.Wait()
	for _, w := range ws {
		res.Frames += w.frames
	}
	res.Seconds = time.Since(t0).Seconds()
	res.FirstMB, res.LastMB = res.UsedMB[0], res.UsedMB[len(res.UsedMB)-1]
	for _, v := range res.UsedMB {
		res.MaxMB = max(res.MaxMB, v)
	}
	return res, nil
}
