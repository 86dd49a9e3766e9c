package pipeline

import (
	"testing"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/objects"
	"github.com/vinfer/vinfer/sink"
)

// TestWatchedGroup: a gated stream whose line counts a class group stays active for a tracked
// detection of any of the group's labels (detections carry labels), not for other classes.
func TestWatchedGroup(t *testing.T) {
	s := &config.Stream{Config: analytics.Config{Lines: []analytics.Line{{Name: "l", Classes: []string{"vehicle"}}}},
		Rules: objects.Rules{Groups: map[string][]string{"vehicle": {"car", "truck"}}}}
	w := watchedClasses(s)
	for label, want := range map[string]bool{"truck": true, "car": true, "person": false} {
		r := &sink.Result{Detections: []detect.Detection{{Label: label, TrackID: 1}}}
		if got := hasObjects(r, true, w); got != want {
			t.Errorf("%s: active %v, want %v", label, got, want)
		}
	}
}
