package api_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/memstat"
	"github.com/vinfer/vinfer/internal/testutil"
)

// rss is the process's resident set in bytes; 0 where unknown.
func rss() int64 {
	n, _ := memstat.RSS()
	return n
}

// TestRemovedStreamMemory: after an 8K stream with snapshots taken was removed, the process
// stayed ~150 MB larger (issue 25, item 8): the freed frame and snapshot buffers were kept by
// the allocators, never given back. Removing a stream returns them: the resident set comes back
// within 64 MiB of what it was before the stream was added.
func TestRemovedStreamMemory(t *testing.T) {
	if rss() == 0 {
		t.Skip("no /proc/self/status")
	}
	dir, clip := clip8K(t)
	e := startWith(t, "", func(c *config.Config) { c.Dir = dir }, nil)
	// The server's own first allocations (a small stream's decoder, one snapshot) come
	// before the baseline.
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"warm","source":%q,"loop":true}`, asset(t, "videos/car-detection.mp4")), 201, nil)
	testutil.Eventually(t, 120*time.Second, "a snapshot of the small stream", func() bool {
		resp, _ := e.do("GET", "/api/streams/warm/snapshot.jpg?wait=0", "")
		return resp.StatusCode == 200
	})
	e.want("DELETE", "/api/streams/warm", "", 204, nil)
	base := rss()
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"big","source":%q,"loop":true}`, clip), 201, nil)
	shots := 0
	testutil.Eventually(t, 180*time.Second, "four snapshots of the 8K stream", func() bool {
		resp, b := e.do("GET", "/api/streams/big/snapshot.jpg?wait=0&quality=100", "")
		if resp.StatusCode == 200 && bytes.HasPrefix(b, []byte{0xff, 0xd8}) {
			shots++
		}
		return shots >= 4
	})
	peak := rss()
	e.want("DELETE", "/api/streams/big", "", 204, nil)
	after := rss()
	// Most of what the stream added goes back (before the fix about a fifth did: 135 → 339 →
	// 293 MiB); the other tests of this process and a loaded machine move the rest. The
	// teardown waits for the stream's last frames (up to 2 minutes), so the wait is as long.
	kept := func() bool { return 2*(after-base) >= peak-base }
	for deadline := time.Now().Add(3 * time.Minute); kept() && time.Now().Before(deadline); after = rss() {
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("resident set: %d MiB before the 8K stream, %d MiB with it, %d MiB after its removal", base>>20, peak>>20, after>>20)
	if kept() {
		t.Fatalf("the resident set stayed %d MiB larger after the stream was removed, of %d MiB it added", (after-base)>>20, (peak-base)>>20)
	}
}
