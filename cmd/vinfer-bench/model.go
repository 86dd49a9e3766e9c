package main

import (
	"fmt"
	"sync"
	"time"
)

type modelResult struct {
	Mode    string  `json:"mode"`
	Batch   int     `json:"batch"`
	Workers int     `json:"workers"`
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
				in, err := d.Alloc(cfg.batch * 3 * yoloxSpec.Width * yoloxSpec.Height * 4)
				if err != nil {
					ready <- err
					return err
				}
				defer in.Free(nil)
				s.Fill32(in.Ptr, 0x42e40000, in.Size/4) // 114.0, the letterbox grey
				eng, err := newEngine(cfg, d, s, in.Ptr, cfg.batch)
				if err != nil {
					ready <- err
					return err
				}
				defer eng.Close()
				for range 20 {
					if err := eng.Infer(s, cfg.batch); err != nil {
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
				for time.Since(t0) < cfg.duration {
					if err := eng.Infer(s, cfg.batch); err != nil {
						return err
					}
					if err := s.Synchronize(); err != nil {
						return err
					}
					runs[w]++
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
	return &modelResult{Mode: "model", Batch: cfg.batch, Workers: cfg.workers, Runs: total, Seconds: el,
		FPS: float64(total*cfg.batch) / el, MsRun: el * 1000 * float64(cfg.workers) / float64(total)}, nil
}
