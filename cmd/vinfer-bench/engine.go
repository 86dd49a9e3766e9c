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
	graph  = flag.Bool("graph", true, "replay the model as CUDA graphs (CUDA EP enable_cuda_graph; one graph per input set)")
)

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func init() { newEngine = newInferEngine }

// inferEngine is one worker's session with one bound run, output buffers and pinned host
// output per input set.
type inferEngine struct {
	sess  *infer.Session
	async bool
	sets  []engineSet
}

type engineSet struct {
	run  *infer.DeviceRun
	outs []*cuda.Buffer
	host *cuda.HostBuffer
}

func newInferEngine(cfg config, d *cuda.Device, s *cuda.Stream, inputs []cuda.Ptr, maxBatch int) (engine, error) {
	if cfg.half {
		return nil, fmt.Errorf("the engine feeds float32 models; run -half without inference")
	}
	if cfg.async && !*graph {
		// Seen on the H200 with the ORT 1.29 CUDA EP plugin: queued runs without a graph abort
		// in the EP's pinned-memory allocator (cudaFreeHost: operation not permitted).
		return nil, fmt.Errorf("-async needs -graph with this CUDA EP (add -async=false)")
	}
	if *ortLib != "" {
		os.Setenv(ort.LibraryEnv, *ortLib)
	}
	if *epLib != "" {
		os.Setenv(infer.CUDAEPLibraryEnv, *epLib)
	}
	opts := infer.StreamOptions(s)
	opts["cudnn_conv_algo_search"] = *algo
	if *graph {
		opts["enable_cuda_graph"] = "1"
	}
	sess, err := infer.Open(infer.Config{Path: cfg.model, Provider: infer.ProviderCUDA, Device: d.Ordinal(),
		ProviderOptions: opts, MaxBatch: maxBatch})
	if err != nil {
		return nil, err
	}
	e := &inferEngine{sess: sess, async: cfg.async}
	for k, in := range inputs {
		set, err := e.newSet(d, in, maxBatch)
		if err == nil && *graph {
			err = set.run.UseGraph(k + 1)
		}
		if err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

func (e *inferEngine) newSet(d *cuda.Device, input cuda.Ptr, maxBatch int) (*engineSet, error) {
	e.sets = append(e.sets, engineSet{})
	set := &e.sets[len(e.sets)-1]
	var ptrs []cuda.Ptr
	for _, o := range e.sess.Outputs() {
		n := tensor.Elements(o.Shape)
		if n < 0 { // dynamic batch: room for maxBatch items
			n = tensor.Elements(o.Shape[1:]) * int64(maxBatch)
		}
		if n <= 0 {
			return nil, fmt.Errorf("output %q has data-dependent dimensions %v", o.Name, o.Shape)
		}
		b, err := d.Alloc(int(4 * n))
		if err != nil {
			return nil, err
		}
		set.outs = append(set.outs, b)
		ptrs = append(ptrs, b.Ptr)
	}
	var err error
	if set.run, err = e.sess.NewDeviceRun(d.Ordinal(), input, ptrs); err != nil {
		return nil, err
	}
	if set.host, err = d.AllocHost(set.run.OutputBytes(0, maxBatch)); err != nil {
		return nil, err
	}
	return set, nil
}

// Infer runs the model on n items of input set k and queues the only host copy of the frame
// path: the first output tensor into pinned memory. Async: it returns once queued.
func (e *inferEngine) Infer(s *cuda.Stream, k, n int) error {
	set := &e.sets[k]
	var err error
	if e.async {
		err = set.run.Queue(n)
	} else {
		err = set.run.Run(n)
	}
	if err != nil {
		return err
	}
	return s.CopyDtoH(set.host, set.outs[0].Ptr, set.run.OutputBytes(0, n))
}

func (e *inferEngine) Close() error {
	for _, set := range e.sets {
		if set.run != nil {
			set.run.Release()
		}
		if set.host != nil {
			set.host.Free()
		}
		for _, b := range set.outs {
			b.Free(nil)
		}
	}
	e.sess.Close()
	return nil
}
