package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/infer"
	"github.com/vinfer/vinfer/internal/ort"
	"github.com/vinfer/vinfer/tensor"
)

// Inference through vinfer's infer package: ONNX Runtime's CUDA EP as a plugin EP on the
// worker's stream, input and outputs bound to device memory (infer.DeviceRun).
var (
	ortLib = flag.String("ort", "", "ONNX Runtime core library (default: $"+ort.LibraryEnv+", then infer's search)")
	epLib  = flag.String("ep", "", "CUDA EP plugin library (default: $"+infer.CUDAEPLibraryEnv+", then "+infer.DefaultCUDAEPLibrary+")")
	algo   = flag.String("cudnn", envOr("VINFER_CUDNN_ALGO", "EXHAUSTIVE"), "cudnn_conv_algo_search: EXHAUSTIVE, HEURISTIC or DEFAULT")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func init() { newEngine = newInferEngine }

type inferEngine struct {
	sess *infer.Session
	run  *infer.DeviceRun
	outs []*cuda.Buffer
	host *cuda.HostBuffer
}

func newInferEngine(cfg config, d *cuda.Device, s *cuda.Stream, input cuda.Ptr, maxBatch int) (engine, error) {
	if cfg.half {
		return nil, fmt.Errorf("the engine feeds float32 models; run -half without inference")
	}
	if *ortLib != "" {
		os.Setenv(ort.LibraryEnv, *ortLib)
	}
	if *epLib != "" {
		os.Setenv(infer.CUDAEPLibraryEnv, *epLib)
	}
	opts := infer.StreamOptions(s)
	opts["cudnn_conv_algo_search"] = *algo
	sess, err := infer.Open(infer.Config{Path: cfg.model, Provider: infer.ProviderCUDA, Device: d.Ordinal(),
		ProviderOptions: opts, MaxBatch: maxBatch})
	if err != nil {
		return nil, err
	}
	e := &inferEngine{sess: sess}
	var ptrs []cuda.Ptr
	for _, o := range sess.Outputs() {
		n := tensor.Elements(o.Shape)
		if n < 0 { // dynamic batch: room for maxBatch items
			n = tensor.Elements(o.Shape[1:]) * int64(maxBatch)
		}
		if n <= 0 {
			e.Close()
			return nil, fmt.Errorf("output %q has data-dependent dimensions %v", o.Name, o.Shape)
		}
		b, err := d.Alloc(int(4 * n))
		if err != nil {
			e.Close()
			return nil, err
		}
		e.outs = append(e.outs, b)
		ptrs = append(ptrs, b.Ptr)
	}
	if e.run, err = sess.NewDeviceRun(d.Ordinal(), input, ptrs); err != nil {
		e.Close()
		return nil, err
	}
	if e.host, err = d.AllocHost(e.run.OutputBytes(0, maxBatch)); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Infer runs the model on n items and queues the only host copy of the frame path: the first
// output tensor into pinned memory.
func (e *inferEngine) Infer(s *cuda.Stream, n int) error {
	if err := e.run.Run(n); err != nil {
		return err
	}
	return s.CopyDtoH(e.host, e.outs[0].Ptr, e.run.OutputBytes(0, n))
}

func (e *inferEngine) Close() error {
	if e.run != nil {
		e.run.Release()
	}
	if e.host != nil {
		e.host.Free()
	}
	for _, b := range e.outs {
		b.Free(nil)
	}
	e.sess.Close()
	return nil
}
