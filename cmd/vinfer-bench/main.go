// Command vinfer-bench measures vinfer's GPU path through the product's own code and prints one
// JSON object per measurement (docs/benchmarks-gpu.md has the commands and results). It
// implements no stage itself:
//
//	decode  decode-only: N file streams through the product's source (source.Open) and stream
//	        decoder (codec.NVDECStream on cuda.Devices' GPU; codec.Decoder with -decoder cpu),
//	        frames released as they come out (they stay in device memory)
//	model   model-only: the product's GPU engine (model.Registry.GetDevice → DeviceVersion:
//	        lanes, batches in flight, CUDA graphs, fused preprocessing, outputs to pinned host
//	        memory) submitting full batches of one NV12 frame in device memory, no decoder
//	e2e     end to end: the product's app (app.New, the same as `vinfer run`) with N file
//	        streams of the clip (decoder: nvdec), a counting sink; -paced releases each stream's
//	        access units at -fps, spread over one frame interval: latency at a given load
//
// Unpaced runs loop the clip for -duration; steady_fps counts what finished between -settle and
// -duration (every stream running, every decoder and lane created).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"sync/atomic"
	"time"
)

// options are the command line.
type options struct {
	mode      string
	clip      string
	fps       float64
	streams   int
	duration  time.Duration
	settle    time.Duration
	paced     bool
	model     string
	batch     int
	workers   int
	inflight  int
	graph     bool
	cudnn     string
	decoder   string
	provider  string
	input     string // WxH for models with a dynamic input size
	score     float64
	maxDelay  time.Duration
	precision string // config precision: fp32, fp16 or auto
	nhwc      string // provider option prefer_nhwc: "", 0 or 1
	minFrames int64  // e2e: keep running past duration until this many results (tests)
}

func main() {
	var o options
	flag.StringVar(&o.mode, "mode", "decode", "decode | model | e2e")
	flag.StringVar(&o.clip, "clip", ".build/gpu-testdata/clip1080p30.mp4", "video file (MP4, MKV, MPEG-TS or raw .h264/.h265) every stream plays in a loop")
	flag.Float64Var(&o.fps, "fps", 30, "the clip's frame rate (pacing, and frame numbers for the latency from arrival)")
	flag.IntVar(&o.streams, "streams", 1, "concurrent streams")
	flag.DurationVar(&o.duration, "duration", 14*time.Second, "run length")
	flag.DurationVar(&o.settle, "settle", 4*time.Second, "left out of steady_fps and the latency figures (decoder and lane start-up)")
	flag.BoolVar(&o.paced, "paced", false, "e2e: release each stream's access units at -fps (latency at a given load)")
	flag.StringVar(&o.model, "model", ".build/gpu-testdata/yolox_nano_416_dyn.onnx", "ONNX model (dynamic batch for batch > 1)")
	flag.IntVar(&o.batch, "batch", 8, "config max_batch")
	flag.IntVar(&o.workers, "workers", 0, "config workers: GPU lanes per model and GPU (0: the product's default)")
	flag.IntVar(&o.inflight, "inflight", 0, "config inflight: batches in flight per lane (0: the product's default)")
	flag.BoolVar(&o.graph, "graph", true, "config cuda_graph")
	flag.StringVar(&o.cudnn, "cudnn", envOr("VINFER_CUDNN_ALGO", "HEURISTIC"), "provider option cudnn_conv_algo_search: EXHAUSTIVE, HEURISTIC or DEFAULT")
	flag.StringVar(&o.decoder, "decoder", "nvdec", "stream decoder: nvdec | cpu (cpu: to try the bench without a GPU)")
	flag.StringVar(&o.provider, "provider", "cuda", "config provider: cuda | cpu")
	flag.StringVar(&o.input, "input", "", "config input WxH (models with a dynamic input size)")
	flag.Float64Var(&o.score, "score", 0, "config score_threshold (0: the family's default)")
	flag.DurationVar(&o.maxDelay, "max-delay", 2*time.Millisecond, "config max_delay")
	flag.StringVar(&o.precision, "precision", "fp32", "config precision: fp32 | fp16 | auto")
	flag.StringVar(&o.nhwc, "nhwc", "", "provider option prefer_nhwc: 0 | 1 (empty: the load times both where precision is fp16 or auto)")
	watchdog := flag.Duration("timeout", 3*time.Minute, "abort (printing every goroutine's stack) after this long")
	flag.Parse()
	time.AfterFunc(*watchdog, func() {
		fmt.Fprintln(os.Stderr, "vinfer-bench: watchdog: still running after", *watchdog)
		pprof.Lookup("goroutine").WriteTo(os.Stderr, 1)
		os.Exit(3)
	})
	res, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vinfer-bench:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(res)
}

func run(o options) (any, error) {
	switch o.mode {
	case "decode":
		return benchDecode(o)
	case "model":
		return benchModel(o)
	case "e2e":
		return benchE2E(o)
	}
	return nil, fmt.Errorf("unknown mode %q (decode, model or e2e)", o.mode)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

// window waits until t0+settle, then until t0+end, and returns the rate at which counter grew
// in between (per second).
func window(t0 time.Time, settle, end time.Duration, counter *atomic.Int64) float64 {
	time.Sleep(time.Until(t0.Add(settle)))
	n0, t1 := counter.Load(), time.Now()
	time.Sleep(time.Until(t0.Add(end)))
	return float64(counter.Load()-n0) / time.Since(t1).Seconds()
}

// pct is the p-quantile (0…1) of sorted values, NaN for none.
func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
