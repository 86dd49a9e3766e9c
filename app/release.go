package app

import (
	"runtime/debug"
	"sync"
	"time"

	"github.com/vinfer/vinfer/internal/memstat"
)

// tearDownWait bounds how long returnMemory waits for a removed stream's teardown (its queued
// frames are inferred first).
const tearDownWait = 2 * time.Minute

// releaseMu keeps two removals from returning memory at once (each is a full collection).
var releaseMu sync.Mutex

// returnMemory gives the memory a removed stream held back to the system once torn is closed
// (the stream torn down: pipeline.TornDown), in the background. Its frames (FFmpeg's pictures
// in the C heap, 50 MB each at 8K, in per-thread malloc arenas), its decoder, and the
// conversion buffers and images of its snapshots (Go heap) are freed by then, but both
// allocators keep freed pages for reuse: the process stayed ~150 MB larger after an 8K stream
// was removed (issue 25, item 8). A full collection with the Go heap's free pages returned
// (debug.FreeOSMemory), then malloc_trim(0) for every glibc arena: tens of milliseconds, once
// per removal.
func (*App) returnMemory(torn <-chan struct{}) {
	go func() { // ends with the teardown, which a pipeline's Stop also brings
		if torn != nil {
			t := time.NewTimer(tearDownWait)
			defer t.Stop()
			select {
			case <-torn:
			case <-t.C:
			}
		}
		releaseMu.Lock()
		defer releaseMu.Unlock()
		debug.FreeOSMemory()
		memstat.Trim()
	}()
}
