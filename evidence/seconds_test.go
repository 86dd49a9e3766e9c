package evidence

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
)

// TestIndexPTSDecimal: an event recorded at 6.56 s (frame 82 of a 12.5 fps camera) is listed by
// the index (GET /api/evidence) with "pts":6.56, as the event itself prints it, not
// 6.5600000000000005 (Duration.Seconds' sum of two float64s).
func TestIndexPTSDecimal(t *testing.T) {
	units := readUnits(t, 15*time.Second) // past the clip's end (post: 5 s)
	e := ev("sample", 6560*time.Millisecond)
	r := newRecorder(t, t.TempDir(), nil)
	feed(r, "sample", units, []event.Event{e}, 300*time.Millisecond)
	it := clipOf(t, r, e.ID)
	b, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	if it.PTS != 6.56 || !bytes.Contains(b, []byte(`"pts":6.56,`)) {
		t.Fatalf("item pts %v, want 6.56: %s", it.PTS, b)
	}
}
