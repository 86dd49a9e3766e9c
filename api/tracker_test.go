package api

import "testing"

func TestTrackerMatch(t *testing.T) {
	tr := newTracker()
	for _, f := range []int64{0, 5, 10} {
		tr.add(event{Stream: "s", Frame: f})
	}
	for _, tc := range []struct {
		frame, want int64
		done        bool
	}{{5, 5, true}, {7, 5, true}, {10, 10, true}, {12, 10, false}} {
		ev, found, done, _ := tr.match("s", tc.frame)
		if !found || ev.Frame != tc.want || done != tc.done {
			t.Errorf("match(%d) = frame %d found %v done %v, want %d, done %v", tc.frame, ev.Frame, found, done, tc.want, tc.done)
		}
	}
	if _, found, _, _ := tr.match("other", 1); found {
		t.Error("a stream without results matched")
	}
	for i := int64(11); i < 11+historyLen; i++ {
		tr.add(event{Stream: "s", Frame: i})
	}
	if ev, _, _, _ := tr.match("s", 3); ev.Frame != 42 { // frame 3 left the ring: the newest
		t.Errorf("match past the ring = %d, want the newest (42)", ev.Frame)
	}
}
