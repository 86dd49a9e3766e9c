package reslog_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/reslog"
)

// TestExportPTSDecimal: a logged frame's pts in the JSON Lines export is its PTS as a decimal
// (6.56 at frame 82 of a 12.5 fps clip, not 6.5600000000000005 as Duration.Seconds gave), as
// the live results print it, for every frame of an hour at 12.5, 25 and 29.97 fps.
func TestExportPTSDecimal(t *testing.T) {
	bad := 0
	for _, step := range []time.Duration{80 * time.Millisecond, 40 * time.Millisecond, 33367 * time.Microsecond} {
		for n := int64(0); n < 90000; n++ {
			f := reslog.Frame{Frame: n, PTS: time.Duration(n) * step, Wall: time.Unix(1, 0), Width: 768, Height: 432}
			b := reslog.AppendJSON(nil, &f)
			i := bytes.Index(b, []byte(`"pts":`))
			got := string(b[i+len(`"pts":`):])
			got = got[:strings.IndexByte(got, ',')]
			want := strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%d.%09d", f.PTS/time.Second, f.PTS%time.Second), "0"), ".")
			if got != want && bad < 5 {
				bad++
				t.Errorf("frame %d at %v a frame: pts %s, want %s", n, step, got, want)
			}
		}
	}
}
