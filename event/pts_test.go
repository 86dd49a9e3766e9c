package event

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
				if got, want := field(b, c.name), decimalSeconds(c.d); got != want && bad < 5 {
					bad++
					t.Errorf("frame %d at %v a frame: %s %s, want %s", n, step, c.name, got, want)
				}
			}
		}
	}
}
