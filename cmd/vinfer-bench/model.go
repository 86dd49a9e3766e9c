package main

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/preprocess"
)

type modelResult struct {
	Mode    string  `json:"mode"`
	Model   string  `json:"model"`
	Batch   int     `json:"batch"`
	Workers int     `json:"workers"`
	Depth   int     `json:"batches_in_flight_per_worker"`
	Graph   bool    `json:"cuda_graph"`
	Runs    int64   `json:"runs"`
	Seconds float64 `json:"seconds"`
	FPS     float64 `json:"images_per_s"`
	MsRun   float64 `json:"ms_per_run"`
	// Precision is what the model computes in, as the load chose (model.Model.Precision).
	Precision string `json:"precision"`
}

// Frame size of the model-only input: what NVDEC makes of the 1080p clip.
const modelFrameW, modelFrameH = 1920, 1080

// benchModel measures the product's GPU engine alone: the model declared as e2e declares it,
// loaded on GPU 0 by model.Registry (its lanes, sets in flight and CUDA graphs), every lane
// submitting full batches of one grey NV12 1080p frame in device memory round its slots for
// o.duration (fused preprocessing, inference, outputs to pinned host memory; no decoder, no
// output decoding). Images/s counts the frames of the batches finished.
func benchModel(o options) (*modelResult, error) {
	cfg, err := benchConfig(o, 0)
	if err != nil {
		return nil, err
	}
	decl := cfg.Models[0]
	dev, err := cuda.Open(0)
	if err != nil {
		return nil, err
	}
	defer dev.Close()
	f, buf, err := greyFrame(dev)
	if err != nil {
		return nil, err
	}
	defer buf.Free(nil)
	reg := model.NewRegistry(cfg.Models)
	defer reg.Close()
	e, err := reg.GetDevice(decl.Name, dev.Ordinal())
	if err != nil {
		return nil, err
	}
	v := e.Acquire()
	if v == nil {
		return nil, errors.New("model closed")
	}
	defer v.Release()
	dv, ok := v.OnDevice()
	if !ok {
		return nil, errors.New("the registry loaded the model on the host")
	}
	n := v.MaxBatch()
	lanes, sets := dv.Lanes(), dv.InFlight()
	var runs atomic.Int64
	var stop atomic.Bool
	errs := make([]error, lanes)
	ready := make(chan struct{}, lanes)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for lane := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[lane] = driveLane(dv, lane, sets, n, f, &runs, &stop, ready, start)
		}()
	}
	for range lanes {
		<-ready
	}
	t0 := time.Now()
	close(start)
	time.Sleep(o.duration)
	stop.Store(true)
	wg.Wait()
	el := time.Since(t0).Seconds()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	total := runs.Load()
	return &modelResult{Mode: "model", Model: o.model, Batch: n, Workers: lanes, Depth: sets, Graph: dv.CUDAGraph(),
		Runs: total, Seconds: el, FPS: float64(total) * float64(n) / el,
		MsRun: el * 1000 * float64(lanes) / float64(max(total, 1)), Precision: dv.Model().Precision}, nil
}

// driveLane is one lane's worker, as the pipeline's: bound to the GPU, it fills each slot in
// turn, waiting for the slot's previous batch first. It warms up once round the slots before
// reporting ready.
func driveLane(dv model.DeviceVersion, lane, sets, n int, f *frame.Frame, runs *atomic.Int64, stop *atomic.Bool,
	ready chan<- struct{}, start <-chan struct{}) error {
	frames := make([]*frame.Frame, n)
	for i := range frames {
		frames[i] = f
	}
	tr := make([]preprocess.Transform, n)
	pending := make([]bool, sets)
	err := dv.Bind()
	for k := 0; err == nil && k < sets; k++ {
		if err = dv.Submit(lane, k, frames, tr); err == nil {
			_, err = dv.Wait(lane, k)
		}
	}
	ready <- struct{}{}
	if err != nil {
		return fmt.Errorf("lane %d: %w", lane, err)
	}
	<-start
	for k := 0; !stop.Load(); k = (k + 1) % sets {
		if pending[k] {
			if _, err := dv.Wait(lane, k); err != nil {
				return err
			}
			runs.Add(1)
		}
		if err := dv.Submit(lane, k, frames, tr); err != nil {
			return err
		}
		pending[k] = true
	}
	for k := range sets { // finished after the window: not counted
		if pending[k] {
			if _, err := dv.Wait(lane, k); err != nil {
				return err
			}
		}
	}
	return nil
}

// greyFrame makes an NV12 1920×1080 frame of mid grey in device memory, as NVDEC's frames are.
func greyFrame(dev *cuda.Device) (*frame.Frame, *cuda.Buffer, error) {
	pitch := modelFrameW
	buf, err := dev.Alloc(pitch * modelFrameH * 3 / 2)
	if err != nil {
		return nil, nil, err
	}
	err = dev.RunLocked(func() error {
		s, err := dev.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		if err := s.Fill32(buf.Ptr, 0x80808080, buf.Size/4); err != nil {
			return err
		}
		return s.Synchronize()
	})
	if err != nil {
		buf.Free(nil)
		return nil, nil, err
	}
	f := &frame.Frame{Format: frame.FormatNV12, Width: modelFrameW, Height: modelFrameH, Device: dev.Ordinal(),
		DevicePlanes: [3]uintptr{uintptr(buf.Ptr), uintptr(buf.Ptr.Add(pitch * modelFrameH))},
		Strides:      [3]int{pitch, pitch}}
	return f, buf, nil
}
