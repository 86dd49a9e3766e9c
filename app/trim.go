package app

import (
	"context"
	"time"

	"github.com/vinfer/vinfer/internal/memstat"
)

// TrimPeriod is how often a running app hands the C heap's free pages back to the system
// (malloc_trim(0), every glibc arena).
//
// glibc keeps what FFmpeg and ONNX Runtime free in the arena of the thread that allocated it,
// one arena per thread that ever called malloc (up to 8 per core), for reuse; at a constant
// stream count the bytes in use stay level while the pages held free grow as allocations of
// varying size (packets, pictures, batches of varying size) land in more arenas and leave
// holes (issue 29 item 8; docs/benchmarks.md, "Memory at a constant stream count"). A trim
// costs tens of milliseconds per 100 MiB freed since the last one (memstat.BenchmarkTrim: 27 ms
// for 64 MiB on a loaded 2-core machine), under each arena's lock in turn, so a thread
// allocating meanwhile may wait that long once a minute.
var TrimPeriod = time.Minute

// startTrim trims every TrimPeriod until ctx ends; the returned func waits for the loop to end.
func startTrim(ctx context.Context) (wait func()) {
	done, period := make(chan struct{}), TrimPeriod
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				releaseMu.Lock() // not beside a removed stream's full release (release.go)
				memstat.Trim()
				releaseMu.Unlock()
			}
		}
	}()
	return func() { <-done }
}
