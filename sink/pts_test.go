package sink

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestPTSDecimal: a result's pts is its nanoseconds as a decimal (6.56 at frame 82 of a 12.5 fps
// clip, not 6.5600000000000005 as Duration.Seconds' sum of two float64s gave), for every frame of
// an hour at 12.5, 25 and 29.97 fps and for negative PTS.
func TestPTSDecimal(t *testing.T) {
	bad := 0
	for _, step := range []time.Duration{80 * time.Millisecond, 40 * time.Millisecond, 33366667, -40 * time.Millisecond} {
		for n := int64(0); n < 90000; n++ {
			r := &Result{Stream: "s", Frame: n, PTS: time.Duration(n) * step, Width: 768, Height: 432}
			got, want := testutil.JSONField(AppendJSON(nil, r), "pts"), testutil.DecimalSeconds(r.PTS)
			if got != want && bad < 5 {
				bad++
				t.Errorf("frame %d at %v a frame: pts %s, want %s", n, step, got, want)
			}
		}
	}
}
