// Command vinfer-bench measures vinfer's GPU path on one machine and prints one JSON object per
// measurement (see docs/benchmarks-gpu.md for the commands and results):
//
//	decode      NVDEC decode-only frames/s with N streams (frames stay in device memory)
//	pre         decode + fused preprocessing into batch tensors, frames/s with N streams
//	model       model-only ONNX Runtime CUDA throughput at a batch size (same engine as e2e)
//	e2e         decode + preprocessing + ONNX Runtime (CUDA EP, IO binding) with N streams:
//	            throughput, frame->result latency p50/p99, host<->device copies per frame
//	firstframe  latency to the first preprocessed frame with N workers starting at once: cold,
//	            after a warm-up, and with a context per worker (the pattern vinfer avoids)
//	memory      device memory over a run with streams added and removed
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

func main() {
	mode := flag.String("mode", "decode", "decode | pre | model | e2e | firstframe | memory")
	clipPath := flag.String("clip", ".build/gpu-testdata/clip1080p30.h264", "Annex-B H.264 clip")
	fps := flag.Float64("fps", 30, "clip frame rate (for pacing and timestamps)")
	streams := flag.Int("streams", 1, "concurrent streams")
	repeat := flag.Int("repeat", 3, "times each stream replays the clip (unpaced modes)")
	duration := flag.Duration("duration", 10*time.Second, "run length of paced modes")
	paced := flag.Bool("paced", false, "feed each stream at the clip's frame rate (e2e latency at a given load)")
	batch := flag.Int("batch", 8, "max frames per inference batch")
	workers := flag.Int("workers", 2, "GPU inference workers per device")
	model := flag.String("model", ".build/gpu-testdata/yolox_nano_416_dyn.onnx", "ONNX model (dynamic batch for batch > 1; scripts/gpu/make-dynamic-batch.py)")
	half := flag.Bool("half", false, "float16 input tensor")
	depth := flag.Int("depth", 2, "batches in flight per worker (input sets; 1: wait for each batch)")
	async := flag.Bool("async", true, "queue inference without waiting (ORT disable_synchronize_execution_providers)")
	decFrames := flag.Int("frames", 8, "decoded frames each NVDEC decoder may have in flight")
	settle := flag.Duration("settle", 0, "leave frames arriving in this first interval out of the latency figures (decoder start-up)")
	watchdog := flag.Duration("timeout", 3*time.Minute, "abort (printing every goroutine's stack) after this long")
	flag.Parse()
	time.AfterFunc(*watchdog, func() {
		fmt.Fprintln(os.Stderr, "vinfer-bench: watchdog: still running after", *watchdog)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		os.Exit(3)
	})

	cfg := config{clip: *clipPath, fps: *fps, streams: *streams, repeat: *repeat, duration: *duration,
		paced: *paced, batch: *batch, workers: *workers, model: *model, half: *half, settle: *settle,
		depth: *depth, async: *async, decFrames: *decFrames}
	var res any
	var err error
	switch *mode {
	case "decode":
		res, err = benchDecode(cfg)
	case "pre":
		res, err = benchPipeline(cfg, false)
	case "e2e":
		res, err = benchPipeline(cfg, true)
	case "firstframe":
		res, err = benchFirstFrame(cfg)
	case "model":
		res, err = benchModel(cfg)
	case "memory":
		res, err = benchMemory(cfg)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "vinfer-bench:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

type config struct {
	clip      string
	fps       float64
	streams   int
	repeat    int
	duration  time.Duration
	paced     bool
	batch     int
	workers   int
	model     string
	half      bool
	settle    time.Duration
	depth     int
	async     bool
	decFrames int
}
