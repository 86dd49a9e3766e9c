package metrics_test

import (
	"github.com/vinfer/vinfer/internal/apptest"
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/metrics"
)

// TestGPUMemory: with a model declared on the CUDA provider, device 0's memory is exported.
// The model is only declared, never loaded: the gauges come from the driver.
func TestGPUMemory(t *testing.T) {
	if !cuda.Available() {
		t.Skip("no CUDA device")
	}
	cfg := &config.Config{Models: []config.Model{{Name: "gpu", Path: "unused.onnx", Provider: config.ProviderCUDA}}}
	a := apptest.MustApp(t, cfg, app.Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer a.Stop()
	mx := metrics.New()
	done := make(chan struct{})
	defer close(done)
	mx.Watch(a, done)
	srv := httptest.NewServer(mx.Handler())
	defer srv.Close()
	fams := scrape(t, srv.URL)
	total, ok := value(fams, "vinfer_gpu_memory_total_bytes", map[string]string{"device": "0"})
	used, _ := value(fams, "vinfer_gpu_memory_used_bytes", map[string]string{"device": "0"})
	if !ok || total < 1<<30 || used <= 0 || used > total {
		t.Fatalf("GPU memory: used %v of %v bytes (present %v)", used, total, ok)
	}
}
