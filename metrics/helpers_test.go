package metrics_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/vinfer/vinfer/metrics"
	"github.com/vinfer/vinfer/sink"
)

// scrape serves /metrics of a Metrics watching src and returns the body.
func scrape(t *testing.T, src metrics.Source) string {
	t.Helper()
	m := metrics.New()
	done := make(chan struct{})
	defer close(done)
	m.Watch(src, done)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

func resultFor(stream, model string) *sink.Result {
	return &sink.Result{Stream: stream, Model: model, Width: 768, Height: 432, Batch: 2,
		Decode: 2 * time.Millisecond, Preprocess: time.Millisecond, QueueWait: 3 * time.Millisecond,
		Inference: 20 * time.Millisecond, Postprocess: 100 * time.Microsecond, Latency: 25 * time.Millisecond}
}
