package api_test

import (
	"bytes"
	"fmt"
	"github.com/vinfer/vinfer/internal/testutil"
	"image/jpeg"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
)

// heapInUse is the Go heap in use after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// clip8K writes three 7680×4320 H.264 frames (FFmpeg's testsrc2, 5 fps) to 8k.mp4 in a
// temporary directory; the test is skipped without an FFmpeg that makes them.
func clip8K(t *testing.T) (dir, clip string) {
	t.Helper()
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("no ffmpeg to make an 8K clip")
	}
	dir = t.TempDir()
	clip = filepath.Join(dir, "8k.mp4")
	out, err := exec.Command(ffmpeg, "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=7680x4320:rate=5",
		"-frames:v", "3", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", clip).CombinedOutput()
	if err != nil {
		t.Skipf("ffmpeg cannot make an 8K clip: %v\n%s", err, out)
	}
	return dir, clip
}

// TestSnapshotMemory: 24 parallel quality=100 snapshots of an 8K stream took RSS from 514 MB
// to 3.77 GB (issue 14, item 5). Snapshots are sampled down while converted (at most
// api.MaxSnapshotSide) and made MaxSnapshots at a time, so the heap they take stays small,
// and nothing is kept once the stream is gone.
func TestSnapshotMemory(t *testing.T) {
	dir, clip := clip8K(t)
	e := startWith(t, "", func(c *config.Config) { c.Dir = dir }, nil)
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"big","source":%q,"loop":true}`, clip), 201, nil)
	testutil.Eventually(t, 120*time.Second, "a decoded 8K frame", func() bool {
		resp, _ := e.do("GET", "/api/streams/big/snapshot.jpg?wait=0&boxes=0", "")
		return resp.StatusCode == 200
	})
	base := heapInUse()
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var ok, busy atomic.Int64
	for range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, b := e.do("GET", "/api/streams/big/snapshot.jpg?quality=100", "")
			switch resp.StatusCode {
			case http.StatusOK:
				ok.Add(1)
				cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
				if err != nil || cfg.Width > api.MaxSnapshotSide || cfg.Height > api.MaxSnapshotSide {
					t.Errorf("snapshot %dx%d (%v), want at most %d a side", cfg.Width, cfg.Height, err, api.MaxSnapshotSide)
				}
			case http.StatusServiceUnavailable:
				busy.Add(1)
			default:
				t.Errorf("snapshot: %s %s", resp.Status, b)
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	t.Logf("24 snapshots: %d made, %d busy; heap in use %d MiB before, peak %d MiB", ok.Load(), busy.Load(), base>>20, peak.Load()>>20)
	if ok.Load() == 0 {
		t.Fatal("no snapshot made")
	}
	// One full-size 8K RGBA image is 133 MB; the sampled ones are 8 MB.
	if grew := int64(peak.Load()) - int64(base); grew > 100<<20 {
		t.Fatalf("snapshots grew the heap by %d MiB", grew>>20)
	}
	e.want("DELETE", "/api/streams/big", "", 204, nil)
	if after := heapInUse(); int64(after)-int64(base) > 32<<20 {
		t.Fatalf("heap in use %d MiB after the stream was removed, %d MiB before the snapshots", after>>20, base>>20)
	}
}
