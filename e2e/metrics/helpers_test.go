package metrics_test

import (
	"time"

	"github.com/vinfer/vinfer/sink"
)

func resultFor(stream, model string) *sink.Result {
	return &sink.Result{Stream: stream, Model: model, Width: 768, Height: 432, Batch: 2,
		Decode: 2 * time.Millisecond, Preprocess: time.Millisecond, QueueWait: 3 * time.Millisecond,
		Inference: 20 * time.Millisecond, Postprocess: 100 * time.Microsecond, Latency: 25 * time.Millisecond}
}
