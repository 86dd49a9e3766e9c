package main

import (
	"fmt"

	"github.com/vinfer/vinfer/cuda"
	"sync"
	"time"
)

type modelResult struct {
	Mode    string  `json:"mode"`
	Batch   int     `json:"batch"`
	Workers int     `json:"workers"`
	Depth   int     `json:"batches_in_flight_per_worker"`
	Async   bool    `json:"async"`
	Graph   bool    `json:"cuda_graph"`
	Runs    int     `json:"runs"`
	Seconds float64 `json:"seconds"`
	FPS     float64 `json:"images_per_s"`
	MsRun   float64 `json:"ms_per_run"`
}

// benchModel measures model-only throughput with the engine the pipeline uses (ORT CUDA EP,
// IO binding on device memory, output copied to pinned host memory): cfg.workers workers each
// running batches of cfg.batch on their own stream for cfg.duration.
func benchModel(cfg config) (*modelResult, error) {
	if newEngine == nil {
		return nil, fmt.Errorf("inference is not compiled into this binary")
	}
	devs, err := openDevices()
	if err != nil {
		return nil, err
	}
	d := devs[0]
	var wg sync.WaitGroup
	runs := make([]int, cfg.workers)
	errs := make([]error, cfg.workers)
	ready := make(chan error, cfg.workers)
	start := make(chan struct{})
	var t0 time.Time
	for w := range cfg.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = d.RunLocked(func() error {
				s, err := d.NewStream()
				if err != nil {
					ready <- err
					return err
				}
				defer s.Destroy()
				// cfg.depth input sets, each with an event marking its batch's end, as in the
				// pipeline's workers.
				var ins []cuda.Ptr
				var done []*cuda.Event
				defer func() {
					for _, e := range done {
						e.Destroy()
					}
				}()
				for range max(1, cfg.depth) {
					in, err := d.Alloc(cfg.batch * 3 * yoloxSpec.Width * yoloxSpec.Height * 4)
					if err != nil {
						ready <- err
						return err
					}
					defer in.Free(nil)
					s.Fill32(in.Ptr, 0x42e40000, in.Size/4) // 114.0, the letterbox grey
					ins = append(ins, in.Ptr)
					e, err := d.NewEvent(false)
					if err != nil {
						ready <- err
						return err
					}
					done = append(done, e)
				}
				eng, err := newEngine(cfg, d, s, ins, cfg.batch)
				if err != nil {
					ready <- err
					return err
				}
				defer eng.Close()
				for i := range 20 {
					if err := eng.Infer(s, i%len(ins), cfg.batch); err != nil {
						ready <- err
						return err
					}
				}
				if err := s.Synchronize(); err != nil {
					ready <- err
					return err
				}
				ready <- nil
				<-start
				for k := 0; time.Since(t0) < cfg.duration; k = (k + 1) % len(ins) {
					if runs[w] >= len(ins) { // set k's last batch must be done before its reuse
						if err := done[k].Synchronize(); err != nil {
							return err
						}
					}
					if err := eng.Infer(s, k, cfg.batch); err != nil {
						return err
					}
					if err := done[k].Record(s); err != nil {
						return err
					}
					runs[w]++
				}
				if err := s.Synchronize(); err != nil {
					return err
				}
				return nil
			})
		}()
	}
	for range cfg.workers {
		if err := <-ready; err != nil {
			return nil, err
		}
	}
	t0 = time.Now()
	close(start)
	wg.Wait()
	el := time.Since(t0).Seconds()
	total := 0
	for w := range runs {
		if errs[w] != nil {
			return nil, errs[w]
		}
		total += runs[w]
	}
	return &modelResult{Mode: "model", Batch: cfg.batch, Workers: cfg.workers, Depth: cfg.depth, Async: cfg.async,
		Graph: *graph, Runs: total, Seconds: el,
		FPS: float64(total*cfg.batch) / el, MsRun: el * 1000 * float64(cfg.workers) / float64(total)}, nil
}
