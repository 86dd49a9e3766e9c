package app_test

import (
	"errors"
	"github.com/vinfer/vinfer/internal/apptest"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/sink"
)

// results keeps every result's detections by stream and frame.
type results struct {
	mu sync.Mutex
	m  map[string]map[int64][]detect.Detection
}

func (r *results) Write(res *sink.Result) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]map[int64][]detect.Detection{}
	}
	if r.m[res.Stream] == nil {
		r.m[res.Stream] = map[int64][]detect.Detection{}
	}
	r.m[res.Stream][res.Frame] = append([]detect.Detection(nil), res.Detections...)
	return nil
}

func (r *results) count(stream string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.m[stream])
}

func newApp(t *testing.T, models []config.Model, sinks ...sink.Sink) (*app.App, *testutil.LogBuffer) {
	t.Helper()
	frame.SetDebug(true)
	t.Cleanup(func() { frame.SetDebug(false) })
	logs := &testutil.LogBuffer{}
	a := apptest.MustApp(t, &config.Config{Models: models}, app.Options{Sinks: sinks,
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	return a, logs
}

// TestNVDECWithoutGPU: on a machine without a GPU, a decoder: nvdec stream is refused at add
// with an error saying so, nothing else is affected (a CPU stream added before and one added
// after run to the end), and a model without provider: cuda is refused for nvdec by name.
func TestNVDECWithoutGPU(t *testing.T) {
	if cuda.Available() {
		t.Skip("this machine has a CUDA device (TestGPUStreamMatchesCPU covers it)")
	}
	yolox := testutil.Asset(t, "models/yolox_nano_416.onnx")
	video := testutil.Asset(t, "videos/car-detection.mp4")
	rec := &results{}
	a, logs := newApp(t, []config.Model{{Name: "m", Path: yolox}, {Name: "g", Path: yolox, Provider: config.ProviderCUDA}}, rec)
	if err := a.AddStream(config.Stream{ID: "before", Source: video, Model: "m", Interval: 8}); err != nil {
		t.Fatal(err)
	}
	err := a.AddStream(config.Stream{ID: "gpu", Source: video, Model: "g", Decoder: config.DecoderNVDEC})
	if !errors.Is(err, cuda.ErrNoGPU) || !strings.Contains(err.Error(), "stream gpu: decoder nvdec: no CUDA device: ") ||
		!strings.Contains(err.Error(), "use decoder: cpu") {
		t.Fatalf("nvdec stream without a GPU: err = %v", err)
	}
	err = a.AddStream(config.Stream{ID: "cpu-model", Source: video, Model: "m", Decoder: config.DecoderNVDEC})
	if err == nil || !strings.Contains(err.Error(), `model "m" needs provider: cuda`) {
		t.Fatalf("nvdec stream on a CPU model: err = %v", err)
	}
	if err := a.AddStream(config.Stream{ID: "after", Source: video, Model: "m", Interval: 8}); err != nil {
		t.Fatal(err)
	}
	a.Pipeline.Wait()
	streams := a.Pipeline.Streams()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	testutil.CheckNoFrameLeaks(t, logs)
	if len(streams) != 2 {
		t.Fatalf("%d streams running, want the 2 CPU ones", len(streams))
	}
	for _, s := range streams {
		if s.Err != nil || s.Stats.Inferred.Load() != 48 || rec.count(s.ID) != 48 {
			t.Errorf("%s: err %v, inferred %d, results %d; want 48", s.ID, s.Err, s.Stats.Inferred.Load(), rec.count(s.ID))
		}
	}
	if len(a.Devices.Opened()) != 0 {
		t.Error("a GPU was opened")
	}
}

// gpuTestdata returns the GPU test inputs made by scripts/gpu/build-run.sh (the clip, and the
// model's copy by `vinfer dynamic-batch`): $VINFER_GPU_TESTDATA, else .build/gpu-testdata.
func gpuTestdata(t *testing.T) (clip, dynModel string) {
	dir := os.Getenv("VINFER_GPU_TESTDATA")
	if dir == "" {
		dir = filepath.Join(testutil.Root(t), ".build", "gpu-testdata")
	}
	clip, dynModel = filepath.Join(dir, "clip1080p30.mp4"), filepath.Join(dir, "yolox_nano_416_dyn.onnx")
	for _, p := range []string{clip, dynModel} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("GPU test input missing: %v (scripts/gpu/testdata.sh, then go run ./cmd/vinfer dynamic-batch assets/models/yolox_nano_416.onnx %s)", err, dynModel)
		}
	}
	return clip, dynModel
}

func needGPU(t *testing.T) {
	if !cuda.Available() {
		t.Skip("no CUDA device")
	}
}

// gpuModels declares the dynamic-batch YOLOX-Nano twice: on the CPU and on ONNX Runtime's CUDA
// provider (the CUDA EP plugin of the GPU machine), batch 8.
func gpuModels(dyn string) []config.Model {
	return []config.Model{
		{Name: "cpu", Path: dyn, MaxBatch: 8},
		{Name: "gpu", Path: dyn, MaxBatch: 8, Provider: config.ProviderCUDA, ProviderOptions: map[string]string{"cudnn_conv_algo_search": "HEURISTIC"}},
	}
}

// newGPUApp skips without a GPU, else returns the 1080p clip and an app with the CPU and GPU
// models recording results into rec, and its log, printed when the test fails.
func newGPUApp(t *testing.T) (clip string, a *app.App, rec *results, logs *testutil.LogBuffer) {
	needGPU(t)
	clip, dyn := gpuTestdata(t)
	rec = &results{}
	a, logs = newApp(t, gpuModels(dyn), rec)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(logs.String())
		}
	})
	return clip, a, rec, logs
}

// TestGPUStreamMatchesCPU runs the 1080p clip through `vinfer run`'s GPU path (NVDEC, fused
// preprocessing, ONNX Runtime CUDA on device memory) and through the CPU path in the same app,
// and compares every frame's detections: same boxes (IoU ≥ 0.9) and scores within 0.02 (the
// GPU's convolutions use TF32). The GPU run copies nothing to the device and only the output
// to the host (once per batch), allocates no device memory, and leaks no frame.
func TestGPUStreamMatchesCPU(t *testing.T) {
	clip, a, rec, logs := newGPUApp(t)
	for _, s := range []config.Stream{
		{ID: "gpu", Source: clip, Model: "gpu", Decoder: config.DecoderNVDEC},
		{ID: "gpu2", Source: clip, Model: "gpu", Decoder: config.DecoderNVDEC},
	} {
		if err := a.AddStream(s); err != nil {
			a.Stop()
			t.Fatal(err)
		}
	}
	before := cuda.ReadStats() // after the GPU model's load and warm-up
	if err := a.AddStream(config.Stream{ID: "cpu", Source: clip, Model: "cpu"}); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	a.Pipeline.Wait()
	st := cuda.ReadStats().Sub(before)
	streams := a.Pipeline.Streams()
	batches := a.Pipeline.ModelStats()["gpu"]
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	testutil.CheckNoFrameLeaks(t, logs)
	for _, s := range streams {
		if s.Err != nil || s.Stats.Inferred.Load() != 300 || s.Stats.DroppedTotal() != 0 {
			t.Fatalf("%s: err %v, inferred %d, dropped %d; want 300 and 0", s.ID, s.Err, s.Stats.Inferred.Load(), s.Stats.DroppedTotal())
		}
	}
	t.Logf("GPU: %d frames in %d batches; copies HtoD %d, DtoH %d (%d bytes), device allocations %d, rebinds %d",
		batches[1], batches[0], st.HtoD, st.DtoH, st.DtoHBytes, st.DeviceAllocs+st.PoolAllocs, st.Rebinds)
	if st.HtoD != 0 || st.DtoH != uint64(batches[0]) || st.DeviceAllocs+st.PoolAllocs != 0 || st.Rebinds != 0 {
		t.Errorf("GPU traffic: HtoD %d (want 0), DtoH %d (want one per batch: %d), device allocations %d (want 0), rebinds %d (want 0)",
			st.HtoD, st.DtoH, batches[0], st.DeviceAllocs+st.PoolAllocs, st.Rebinds)
	}
	if want := uint64(batches[1]) * 3549 * 85 * 4; st.DtoHBytes != want {
		t.Errorf("DtoH %d bytes, want the [n,3549,85] output of the %d frames: %d", st.DtoHBytes, batches[1], want)
	}
	for _, id := range []string{"gpu", "gpu2"} {
		compareDetections(t, id, rec.m[id], rec.m["cpu"])
	}
}

// compareDetections matches every CPU detection to a GPU one of the same class with IoU ≥ 0.9
// and a score within 0.02, and the other way round; detections within 0.02 of the score
// threshold may be missing on one side.
func compareDetections(t *testing.T, id string, gpu, cpu map[int64][]detect.Detection) {
	t.Helper()
	if len(gpu) != len(cpu) {
		t.Fatalf("%s: %d frames, CPU %d", id, len(gpu), len(cpu))
	}
	thr := detect.DefaultParams(detect.FamilyYOLOX).ScoreThreshold
	var n, worstScore, worstIoU = 0, float32(0), float32(1)
	unmatched := func(a, b []detect.Detection, fi int64, side string) {
		for _, d := range a {
			best, ds := float32(0), float32(1)
			for _, e := range b {
				if e.ClassID == d.ClassID {
					if iou := detect.IoU(d.Box, e.Box); iou > best {
						best, ds = iou, abs(e.Score-d.Score)
					}
				}
			}
			if best >= 0.9 && ds <= 0.02 {
				worstIoU, worstScore = min(worstIoU, best), max(worstScore, ds)
				continue
			}
			if d.Score < thr+0.02 {
				continue // at the threshold: the other side may have it just below
			}
			t.Errorf("%s frame %d: %s detection %+v has no match (best IoU %.3f, score difference %.3f)", id, fi, side, d, best, ds)
		}
	}
	for fi, c := range cpu {
		g, ok := gpu[fi]
		if !ok {
			t.Fatalf("%s: frame %d has no GPU result", id, fi)
		}
		n += len(c)
		unmatched(c, g, fi, "CPU")
		unmatched(g, c, fi, "GPU")
	}
	if n == 0 {
		t.Fatalf("%s: the CPU path found nothing to compare", id)
	}
	t.Logf("%s: %d CPU detections matched, worst IoU %.4f, worst score difference %.4f", id, n, worstIoU, worstScore)
}

func abs(v float32) float32 {
	if v < 0 {
		return -v
	}
	return v
}

// TestGPUReloadAndRestream: hot reload of a GPU model under load swaps its version without
// losing a frame, the old version's GPU memory is freed, and streams removed and added again
// reuse the device without leaking frames.
func TestGPUReloadAndRestream(t *testing.T) {
	clip, a, _, logs := newGPUApp(t)
	add := func(id string) {
		if err := a.AddStream(config.Stream{ID: id, Source: clip, Model: "gpu", Decoder: config.DecoderNVDEC, Loop: true}); err != nil {
			a.Stop()
			t.Fatal(err)
		}
	}
	add("a")
	add("b")
	time.Sleep(time.Second)
	es := a.Registry.LoadedDevices("gpu")
	if len(es) != 1 || es[0].Device() != 0 {
		t.Fatalf("GPU entries %v, want one on cuda:0", es)
	}
	if err := es[0].Reload(); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := a.RemoveStream("b"); err != nil {
			t.Fatal(err)
		}
		add("b")
		time.Sleep(300 * time.Millisecond)
		_ = i
	}
	time.Sleep(time.Second)
	streams := a.Pipeline.Streams()
	versions := a.Registry.Versions()
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	testutil.CheckNoFrameLeaks(t, logs)
	if es[0].Loads() != 2 || versions != 1 {
		t.Errorf("loads %d (want 2), versions holding a session %d (want 1: the old one freed)", es[0].Loads(), versions)
	}
	for _, s := range streams {
		if s.Err != nil || s.Stats.Inferred.Load() == 0 || s.Stats.Dropped[pipeline.DropInferError].Load() != 0 {
			t.Errorf("%s: err %v, inferred %d, inference errors %d", s.ID, s.Err, s.Stats.Inferred.Load(), s.Stats.Dropped[pipeline.DropInferError].Load())
		}
	}
	t.Logf("stream a inferred %d frames across the reload", streams[0].Stats.Inferred.Load())
}
