package pipeline_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/frame"
	vmodel "github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/preprocess"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/file"
)

// Pipeline efficiency, measured side by side in one benchmark run: N streams of
// car-detection.mp4 (377 frames each, 768×432) through the whole pipeline, against the same
// work per stage alone: the stream stage (source → decode → preprocess to a [3,416,416] float32
// slot) for the N streams in parallel, and inference alone (YOLOX-Nano 416×416, batch 1, the
// pipeline's session settings). Both the pipeline and inference alone use the same ONNX Runtime
// intra-op thread budget, a second dimension: threads=default (ONNX Runtime's choice, one per
// physical core) and threads=1 (inference takes one core and leaves the others to decoding, so
// the ratio shows the pipeline's own overhead rather than the two stages sharing cores).
//
// Reported: end-to-end fps, decode-fps (decoding alone), stream-fps (decoding + preprocessing
// alone), infer-fps, efficiency = end-to-end / slowest stage, heap allocations per frame and GC
// cycles per 1000 frames over the end-to-end run.
//
//	go test -run XXX -bench Efficiency -benchtime 1x ./pipeline/
//
// $VINFER_BENCH_STREAMS picks the stream counts (default "1 4 16"), $VINFER_BENCH_THREADS the
// intra-op thread budgets (default "0 1"; 0 is ONNX Runtime's default).
func BenchmarkEfficiency(b *testing.B) {
	clip := filepath.Join(assets(b), "videos", "car-detection.mp4")
	model := filepath.Join(assets(b), "models", "yolox_nano_416.onnx")
	for _, threads := range benchInts("VINFER_BENCH_THREADS", []int{0, 1}, 0) {
		name := fmt.Sprintf("threads=%d", threads)
		if threads == 0 {
			name = "threads=default"
		}
		b.Run(name, func(b *testing.B) {
			mc := config.Model{Name: "m", Path: model, IntraOpThreads: threads}
			for _, n := range benchInts("VINFER_BENCH_STREAMS", []int{1, 4, 16}, 1) {
				b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
					frames := float64(n * 377)
					var e2e, dec, str, inf float64
					var allocs, gcs float64
					for i := 0; i < b.N; i++ {
						e2e, allocs, gcs = endToEnd(b, n, clip, mc)
						dec = frames / streamAlone(b, n, clip, nil)
						spec := loadSpec(b, mc)
						str = frames / streamAlone(b, n, clip, &spec)
						inf = inferenceAlone(b, mc, 300)
					}
					b.ReportMetric(e2e, "e2e-fps")
					b.ReportMetric(dec, "decode-fps")
					b.ReportMetric(str, "stream-fps")
					b.ReportMetric(inf, "infer-fps")
					b.ReportMetric(e2e/min(str, inf), "efficiency")
					b.ReportMetric(allocs/frames, "allocs/frame")
					b.ReportMetric(gcs*1000/frames, "GC/1000frames")
				})
			}
		})
	}
}

func endToEnd(b *testing.B, n int, clip string, mc config.Model) (fps, allocs, gcs float64) {
	cfg := &config.Config{Models: []config.Model{mc}}
	a := app.New(context.Background(), cfg, app.Options{Sinks: []sink.Sink{discard{}}})
	if _, err := a.Registry.Get(mc.Name); err != nil { // load and warm up outside the timing
		b.Fatal(err)
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := a.AddStream(config.Stream{ID: fmt.Sprint(i), Source: clip, Model: mc.Name}); err != nil {
			b.Fatal(err)
		}
	}
	a.Pipeline.Wait()
	el := time.Since(t0)
	runtime.ReadMemStats(&m1)
	var inferred int64
	for _, s := range a.Pipeline.Streams() {
		inferred += s.Stats.Inferred.Load()
	}
	a.Stop()
	if want := int64(n * 377); inferred != want {
		b.Fatalf("%d streams inferred %d frames, want %d", n, inferred, want)
	}
	return float64(inferred) / el.Seconds(), float64(m1.Mallocs - m0.Mallocs), float64(m1.NumGC - m0.NumGC)
}

type discard struct{}

func (discard) Write(*sink.Result) error { return nil }

// loadSpec returns the preprocessing of the model mc declares.
func loadSpec(b *testing.B, mc config.Model) preprocess.Spec {
	m, err := vmodel.Load(mc)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	return m.Pre
}

// streamAlone runs n copies of clip in parallel through the stream stage alone (one source and
// decoder each; with spec, also a CPU preprocessor writing each frame into one input slot, as
// the pipeline's stream goroutines do) and returns the seconds.
func streamAlone(b *testing.B, n int, clip string, spec *preprocess.Spec) float64 {
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := &file.Source{Path: clip}
			if err := src.Init(); err != nil {
				b.Error(err)
				return
			}
			defer src.Close()
			d := &codec.Decoder{Codec: src.Info().Codec}
			if err := d.Init(); err != nil {
				b.Error(err)
				return
			}
			defer d.Close()
			var pre *preprocess.CPU
			var slot []float32
			if spec != nil {
				var err error
				if pre, err = preprocess.NewCPU(*spec); err != nil {
					b.Error(err)
					return
				}
				defer pre.Close()
				slot = make([]float32, 3*spec.Width*spec.Height)
			}
			emit := func(f *frame.Frame) error {
				defer f.Release()
				if pre != nil {
					_, err := pre.Run(f, slot)
					return err
				}
				return nil
			}
			ctx := context.Background()
			for {
				au, err := src.Read(ctx)
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Error(err)
					return
				}
				if err := d.Decode(ctx, au, emit); err != nil {
					b.Error(err)
					return
				}
			}
			d.Flush(ctx, emit)
		}()
	}
	wg.Wait()
	return time.Since(t0).Seconds()
}

// inferenceAlone runs the model on one input k times and returns frames per second.
func inferenceAlone(b *testing.B, mc config.Model, k int) float64 {
	s, err := vmodel.Load(mc) // the same session settings as the pipeline
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	s.Run(1)
	t0 := time.Now()
	for i := 0; i < k; i++ {
		if _, err := s.Run(1); err != nil {
			b.Fatal(err)
		}
	}
	return float64(k) / time.Since(t0).Seconds()
}

// Dynamic batching: 8 streams on a dynamic-batch copy of YOLOX-Nano (made with
// scripts/gpu/make-dynamic-batch.py), max_batch 1 against max_batch 8, same run.
//
//	go test -run XXX -bench Batching -benchtime 1x ./pipeline/
func BenchmarkBatching(b *testing.B) {
	dyn := filepath.Join(b.TempDir(), "yolox_dynamic.onnx")
	root := filepath.Dir(assets(b))
	if out, err := exec.Command("/usr/bin/python3", filepath.Join(root, "scripts/gpu/make-dynamic-batch.py"),
		filepath.Join(assets(b), "models/yolox_nano_416.onnx"), dyn).CombinedOutput(); err != nil {
		b.Fatalf("making a dynamic-batch model: %v: %s", err, out)
	}
	clip := filepath.Join(assets(b), "videos", "car-detection.mp4")
	fps := map[int]float64{}
	for _, mb := range []int{1, 8} {
		cfg := &config.Config{Models: []config.Model{{Name: "m", Path: dyn, MaxBatch: mb, MaxDelay: config.Duration(5 * time.Millisecond)}}}
		var batches []int
		var mu sync.Mutex
		a := app.New(context.Background(), cfg, app.Options{Sinks: []sink.Sink{discard{}},
			OnBatch: func(_ string, n int) { mu.Lock(); batches = append(batches, n); mu.Unlock() }})
		if _, err := a.Registry.Get("m"); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		for i := 0; i < 8; i++ {
			a.AddStream(config.Stream{ID: fmt.Sprint(i), Source: clip, Model: "m"})
		}
		a.Pipeline.Wait()
		fps[mb] = 8 * 377 / time.Since(t0).Seconds()
		a.Stop()
		mean := 0.0
		for _, n := range batches {
			mean += float64(n)
		}
		b.ReportMetric(fps[mb], fmt.Sprintf("fps-maxbatch%d", mb))
		b.ReportMetric(mean/float64(len(batches)), fmt.Sprintf("meanbatch-maxbatch%d", mb))
	}
	b.ReportMetric(fps[8]/fps[1], "speedup")
	_ = os.Remove(dyn)
}

// benchInts parses $env as a list of integers ≥ least separated by spaces or commas; def when
// unset or when nothing in it parses.
func benchInts(env string, def []int, least int) []int {
	var out []int
	for _, f := range strings.Fields(strings.ReplaceAll(os.Getenv(env), ",", " ")) {
		if n, err := strconv.Atoi(f); err == nil && n >= least {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}
