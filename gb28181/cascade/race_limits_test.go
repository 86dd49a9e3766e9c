package cascade_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestLimitsConcurrent: INVITEs sent at once still open at most 16 live views; the rest are
// answered 486 (the bound was checked before the session was made and added after, so 40 at
// once opened more, in about one burst of six: 40 bursts here).
func TestLimitsConcurrent(t *testing.T) {
	for range 40 {
		t.Run("burst", burst)
		if t.Failed() {
			return
		}
	}
}

func burst(t *testing.T) {
	up := upsim.New(t, "UDP", upperID, password)
	c := start(t, up, password, &testutil.LogBuffer{})
	testutil.Eventually(t, wait, "registered", func() bool { return c.Upstream(0).Registered() && up.Lower() != "" })
	var ok, busy atomic.Int32
	var wg sync.WaitGroup
	for range 40 {
		rx := upsim.NewReceiver(t, "udp")
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, _ := up.Invite(channel1, rx, "0100000001")
			switch m.Status() {
			case 200:
				ok.Add(1)
			case 486:
				busy.Add(1)
			}
		}()
	}
	wg.Wait()
	if ok.Load() > 16 || ok.Load()+busy.Load() != 40 {
		t.Fatalf("%d INVITEs answered 200 and %d 486 of 40 at once, want at most 16 200", ok.Load(), busy.Load())
	}
	if n := c.Upstream(0).Sessions(); n > 16 {
		t.Fatalf("%d live views, want at most 16", n)
	}
}
