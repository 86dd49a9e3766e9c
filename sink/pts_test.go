package sink

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// decimalSeconds is d in seconds written exactly: at most 9 decimals, trailing zeros dropped.
func decimalSeconds(d time.Duration) string {
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	s := fmt.Sprintf("%d.%09d", d/time.Second, d%time.Second)
	return sign + strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// field is the text of "name": in line, up to the next ',' or '}'.
func field(line []byte, name string) string {
	key := []byte(`"` + name + `":`)
	i := bytes.Index(line, key)
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	if j := bytes.IndexAny(rest, ",}"); j >= 0 {
		rest = rest[:j]
	}
	return string(rest)
}

// TestPTSDecimal: a result's pts is its nanoseconds as a decimal (6.56 at frame 82 of a 12.5 fps
// clip, not 6.5600000000000005 as Duration.Seconds' sum of two float64s gave), for every frame of
// an hour at 12.5, 25 and 29.97 fps and for negative PTS.
func TestPTSDecimal(t *testing.T) {
	bad := 0
	for _, step := range []time.Duration{80 * time.Millisecond, 40 * time.Millisecond, 33366667, -40 * time.Millisecond} {
		for n := int64(0); n < 90000; n++ {
			r := &Result{Stream: "s", Frame: n, PTS: time.Duration(n) * step, Width: 768, Height: 432}
			got, want := field(AppendJSON(nil, r), "pts"), decimalSeconds(r.PTS)
			if got != want && bad < 5 {
				bad++
				t.Errorf("frame %d at %v a frame: pts %s, want %s", n, step, got, want)
			}
		}
	}
}
