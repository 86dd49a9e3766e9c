package app

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/memstat"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestRunningAppReturnsFreedCHeap: at a constant stream count `vinfer run`'s RSS crept while
// the C heap in use stayed level (issue 29, item 8): what FFmpeg and ONNX Runtime freed stayed
// resident in malloc's arenas, given back only when a stream was removed. A running app hands
// it back every TrimPeriod: 64 MiB freed but resident before it starts leave the resident set.
func TestRunningAppReturnsFreedCHeap(t *testing.T) {
	if n, _ := memstat.RSS(); n == 0 {
		t.Skip("no /proc/self/status")
	}
	defer func(p time.Duration) { TrimPeriod = p }(TrimPeriod)
	TrimPeriod = 100 * time.Millisecond
	cfg, err := config.Parse([]byte("models: [{name: m, path: m.onnx}]\nstreams: [{id: cam1, source: a.mp4, model: m}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Dir = t.TempDir()
	base, _ := memstat.RSS()
	release := memstat.HoldFree(64 << 20)
	defer release()
	held, _ := memstat.RSS()
	if held-base < 48<<20 {
		t.Skipf("malloc gave the freed pages back by itself (%d MiB kept of 64)", (held-base)>>20)
	}
	a, err := New(context.Background(), cfg, Options{Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	var now int64
	testutil.Eventually(t, 20*time.Second, "the freed C heap given back", func() bool {
		now, _ = memstat.RSS()
		return now < held-32<<20
	})
	t.Logf("resident set: %d MiB, %d MiB with 64 MiB freed in the C heap, %d MiB once trimmed", base>>20, held>>20, now>>20)
}
