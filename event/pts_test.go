package event

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestSecondsDecimal: an event's pts and dwell are their nanoseconds as decimals (6.56, not
// 6.5600000000000005 as Duration.Seconds gave), for every frame of an hour at 12.5, 25 and
// 29.97 fps.
func TestSecondsDecimal(t *testing.T) {
	bad := 0
	for _, step := range []time.Duration{80 * time.Millisecond, 40 * time.Millisecond, 33366667} {
		for n := int64(0); n < 90000; n++ {
			d := time.Duration(n) * step
			e := Event{ID: NewID(time.Unix(1, 0)), Type: ZoneLeave, Stream: "s", Frame: n, PTS: d, Dwell: d + step,
				Time: time.Unix(1, 0), Label: "person", Zone: "table"}
			b := e.AppendJSON(nil)
			for _, c := range []struct {
				name string
				d    time.Duration
			}{{"pts", d}, {"dwell", d + step}} {
				if got, want := testutil.JSONField(b, c.name), testutil.DecimalSeconds(c.d); got != want && bad < 5 {
					bad++
					t.Errorf("frame %d at %v a frame: %s %s, want %s", n, step, c.name, got, want)
				}
			}
		}
	}
}
