package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/vinfer/vinfer/internal/sigstack"
)

// keepSignalStack keeps every signal handler of the process on the signal stack until ctx ends:
// a handler that a native library (ONNX Runtime, its CUDA provider, NVDEC) installs without
// SA_ONSTACK would make a SIGINT or SIGTERM landing on a thread running Go abort the process
// ("non-Go code set up signal handler without SA_ONSTACK flag") instead of stopping it. ort.Load
// and infer fix them right after native initialisation; this catches the rest within a second.
// Each fix is logged at debug level.
func keepSignalStack(ctx context.Context, log *slog.Logger) {
	sigstack.Report(func(moved []sigstack.Moved) {
		for _, m := range moved {
			log.Debug("signal handlers moved onto the signal stack (set up by a native library without SA_ONSTACK)",
				"signal", int(m.Signal), "name", m.Signal.String(), "library", m.Library)
		}
	})
	sigstack.Keep(ctx, time.Second)
}
