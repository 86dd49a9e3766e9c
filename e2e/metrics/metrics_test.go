package metrics_test

import (
	"context"
	"github.com/vinfer/vinfer/internal/apptest"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/metrics"
	vmodel "github.com/vinfer/vinfer/model"
)

func asset(t testing.TB, rel string) string { return testutil.Asset(t, rel) }

// scrape fetches url and parses the Prometheus text exposition.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value returns the value of the series of family name whose labels include want; found is
// false when there is none. Histograms give their sample count.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func sum(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var s float64
	f := fams[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		if m.Counter != nil {
			s += m.Counter.GetValue()
		}
		if m.Histogram != nil {
			s += m.Histogram.GetSampleSum()
		}
	}
	return s
}

// TestKnownRun runs car-detection.mp4 (377 frames) through YOLOX-Nano inferring every 5th
// frame, scrapes /metrics over loopback and checks the counters against the file's known frame
// count, and the histograms against the inferred frames.
func TestKnownRun(t *testing.T) {
	m, err := vmodel.Declare(asset(t, "models/yolox_nano_416.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	m.Name = "yolox"
	m.Preload = true
	cfg := &config.Config{Models: []config.Model{m}}
	mx := metrics.New()
	a := apptest.MustApp(t, cfg, app.Options{
		Log:      slog.New(slog.NewTextHandler(io.Discard, nil)),
		Observer: mx,
	})
	defer a.Stop()
	done := make(chan struct{})
	defer close(done)
	mx.Watch(a, done)
	srv := httptest.NewServer(mx.Handler())
	defer srv.Close()

	// Before any stream: the model is declared and preloaded, nothing else yet.
	if err := a.Registry.Preload(false); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, srv.URL)
	if v, ok := value(fams, "vinfer_model_loaded", map[string]string{"model": "yolox"}); !ok || v != 1 {
		t.Fatalf("vinfer_model_loaded = %v (present %v), want 1", v, ok)
	}
	if v, _ := value(fams, "vinfer_model_load_seconds", map[string]string{"model": "yolox"}); v <= 0 || v > 60 {
		t.Errorf("vinfer_model_load_seconds = %v, want a load time", v)
	}

	const frames, interval = 377, 5
	const inferred = (frames + interval - 1) / interval // frames 0, 5, …, 375
	if err := a.AddStream(config.Stream{ID: "cars", Source: asset(t, "videos/car-detection.mp4"), Model: "yolox", Interval: interval}); err != nil {
		t.Fatal(err)
	}
	waitCtx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	ended := make(chan struct{})
	go func() { a.Pipeline.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-waitCtx.Done():
		t.Fatal("the stream did not end within 3 minutes")
	}
	st, _ := a.Pipeline.Stream("cars")
	if st.Err != nil {
		t.Fatal(st.Err)
	}
	// The hooks run on the pipeline's output goroutine, after the stream counters: give the
	// last results time to reach them.
	testutil.Eventually(t, 30*time.Second, "every inferred frame in the latency histogram", func() bool {
		fams = scrape(t, srv.URL)
		n, _ := value(fams, "vinfer_stream_latency_seconds", map[string]string{"stream": "cars"})
		return n >= inferred
	})
	stream := map[string]string{"stream": "cars"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"vinfer_access_units_total", stream, frames},
		{"vinfer_frames_decoded_total", stream, frames},
		{"vinfer_frames_inferred_total", stream, inferred},
		{"vinfer_frames_dropped_total", map[string]string{"stream": "cars", "reason": "interval"}, frames - inferred},
		{"vinfer_frames_dropped_total", map[string]string{"stream": "cars", "reason": "decode_error"}, 0},
		{"vinfer_frames_dropped_total", map[string]string{"stream": "cars", "reason": "queue_full"}, 0},
		{"vinfer_streams_active", nil, 0},
		{"vinfer_stream_info", map[string]string{"stream": "cars", "model": "yolox", "live": "false"}, 1},
		{"vinfer_queue_depth_frames", stream, 0},
		{"vinfer_model_loads_total", map[string]string{"model": "yolox"}, 1},
		{"vinfer_inference_batch_frames_total", map[string]string{"model": "yolox"}, inferred},
		// One histogram sample per inferred frame in every stage, and per stream.
		{"vinfer_stage_duration_seconds", map[string]string{"model": "yolox", "stage": "decode"}, inferred},
		{"vinfer_stage_duration_seconds", map[string]string{"model": "yolox", "stage": "preprocess"}, inferred},
		{"vinfer_stage_duration_seconds", map[string]string{"model": "yolox", "stage": "queue_wait"}, inferred},
		{"vinfer_stage_duration_seconds", map[string]string{"model": "yolox", "stage": "inference"}, inferred},
		{"vinfer_stage_duration_seconds", map[string]string{"model": "yolox", "stage": "postprocess"}, inferred},
		{"vinfer_stage_duration_seconds", map[string]string{"model": "yolox", "stage": "end_to_end"}, inferred},
		{"vinfer_stream_latency_seconds", stream, inferred},
	} {
		got, ok := value(fams, c.name, c.labels)
		if !ok {
			t.Errorf("%s%v: missing", c.name, c.labels)
			continue
		}
		if got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// Batches: as many runs as the counter says, and their sizes add up to the frames.
	runs, _ := value(fams, "vinfer_inference_batches_total", map[string]string{"model": "yolox"})
	hruns, _ := value(fams, "vinfer_batch_size", map[string]string{"model": "yolox"})
	if runs < 1 || runs != hruns {
		t.Errorf("vinfer_inference_batches_total = %v, vinfer_batch_size count = %v: want equal and ≥ 1", runs, hruns)
	}
	if s := sum(fams, "vinfer_batch_size", map[string]string{"model": "yolox"}); s != inferred {
		t.Errorf("vinfer_batch_size sum = %v, want %d frames", s, inferred)
	}
	// Detections per label add up to the stream's total (car-detection's cars from above come
	// out as several COCO classes; any is fine, the sum is what is checked).
	if d, want := sum(fams, "vinfer_detections_total", stream), float64(st.Stats.Detections.Load()); d != want || d == 0 {
		t.Errorf("vinfer_detections_total sums to %v, want %v (> 0)", d, want)
	}
	// End-to-end covers the stages before it; stage sums are real durations.
	e2e := sum(fams, "vinfer_stage_duration_seconds", map[string]string{"stage": "end_to_end"})
	inf := sum(fams, "vinfer_stage_duration_seconds", map[string]string{"stage": "inference"})
	if inf <= 0 || e2e < inf/float64(max(1, runs)) || e2e > 3600 {
		t.Errorf("end-to-end sum %v s, inference sum %v s: implausible", e2e, inf)
	}
	// The frame pool is reported (the decoder's, all frames released after the end).
	if c, ok := value(fams, "vinfer_frame_pool_capacity_frames", stream); !ok || c < 1 {
		t.Errorf("vinfer_frame_pool_capacity_frames = %v (present %v)", c, ok)
	}
	if u, _ := value(fams, "vinfer_frame_pool_frames", map[string]string{"stream": "cars", "state": "in_use"}); u != 0 {
		t.Errorf("vinfer_frame_pool_frames{state=in_use} = %v after the end, want 0", u)
	}
	// Efficiency is a ratio; the window covers the run (a few seconds).
	if e, ok := value(fams, "vinfer_pipeline_efficiency_ratio", map[string]string{"model": "yolox"}); !ok || e < 0 || e > 1 || math.IsNaN(e) {
		t.Errorf("vinfer_pipeline_efficiency_ratio = %v (present %v), want 0…1", e, ok)
	}
	for _, name := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if fams[name] == nil {
			t.Errorf("%s missing: the Go and process collectors should be registered", name)
		}
	}

	// A removed stream's series go away.
	if err := a.RemoveStream("cars"); err != nil {
		t.Fatal(err)
	}
	fams = scrape(t, srv.URL)
	for _, name := range []string{"vinfer_frames_decoded_total", "vinfer_stream_latency_seconds"} {
		if _, ok := value(fams, name, stream); ok {
			t.Errorf("%s{stream=cars} still exported after the stream was removed", name)
		}
	}
}
