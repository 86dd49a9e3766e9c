package evidence

import (
	"testing"
	"time"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/sink"
)

// TestClassesSelectGroup: evidence classes may name a class group (a stream's groups:): an
// event of a car of group vehicle is recorded for classes [vehicle], a person's is not.
func TestClassesSelectGroup(t *testing.T) {
	r := newRecorder(t, t.TempDir(), func(r *Recorder) { r.Classes = []string{"vehicle"} })
	car, person := ev("s", time.Second), ev("s", time.Second)
	car.Label, car.Group = "car", "vehicle"
	res := &sink.Result{Stream: "s", Events: []event.Event{car, person}}
	r.Write(res)
	if e := res.Events[0].Evidence; e == nil || !e.Clip {
		t.Errorf("grouped car: evidence %+v, want a clip", e)
	}
	if e := res.Events[1].Evidence; e == nil || e.Clip {
		t.Errorf("person: evidence %+v, want none", e)
	}
}
