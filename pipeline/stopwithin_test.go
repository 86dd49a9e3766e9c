package pipeline_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/pipeline"
)

// TestHostStopWithinDrain: an endless file stream fills its queue while its model's run is held.
// StopWithin(drain) does not wait on the queued frames past drain: they go back to their pool,
// counted as shutdown, while the batch already running finishes once the run is let go. (Stop,
// with no bound, still infers every queued frame.)
func TestHostStopWithinDrain(t *testing.T) {
	e := newFakeEngine("m", 1)
	e.hold()
	r := newHostRig(t, 0, e)
	r.add(t, "a", "m", &fakeSource{n: -1}, config.DropBlock, nil)
	testutil.Within(t, hostWait, "a run to begin", e.started)
	testutil.Eventually(t, hostWait, "a's queue to fill", func() bool { return r.stats(t, "a").Queue > 1 })
	done := make(chan error, 1)
	go func() { done <- r.p.StopWithin(50 * time.Millisecond) }()
	testutil.Eventually(t, hostWait, "the queued frames dropped", func() bool {
		return strings.Contains(r.logs.String(), "queued frame(s) not inferred within 50ms")
	})
	e.open() // the batch already running finishes
	if err := testutil.Within(t, hostWait, "StopWithin", done); err != nil {
		t.Fatal(err)
	}
	st := r.stats(t, "a").Stats
	shut, inf, dec := st.Dropped[pipeline.DropShutdown].Load(), st.Inferred.Load(), st.Decoded.Load()
	if shut == 0 || inf+st.DroppedTotal() != dec {
		t.Errorf("decoded %d, inferred %d, dropped %d (shutdown %d): want queued frames dropped as shutdown, every frame accounted for",
			dec, inf, st.DroppedTotal(), shut)
	}
	testutil.CheckNoFrameLeaks(t, r.logs)
}
