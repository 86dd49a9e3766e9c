package api

import (
	"strings"
	"testing"
)

func TestRedactSource(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/videos/clip.mp4", "/videos/clip.mp4"},
		{"clip.mp4", "clip.mp4"},
		{"file:///videos/clip.mp4", "file:///videos/clip.mp4"},
		{"rtsp://admin:s3cret@10.0.0.5:554/Streaming/Channels/101", "rtsp://REDACTED@10.0.0.5:554/Streaming/Channels/101"},
		{"rtsp://cam/live?user=admin&password=abc", "rtsp://cam/live?user=REDACTED&password=REDACTED"},
		{"rtp://127.0.0.1:5004?codec=h264", "rtp://127.0.0.1:5004?codec=h264"},
		{"gb28181://:15060?transport=udp&ssrc=123", "gb28181://:15060?transport=udp&ssrc=123"},
	} {
		if got := redactSource(tc.in); got != tc.want {
			t.Errorf("redactSource(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScrubMessage(t *testing.T) {
	for _, tc := range []struct{ raw, msg string }{
		{"rtsp://admin:s3cret@cam/live", "stream x: dial rtsp://admin:s3cret@cam/live: refused"},
		{"rtsp://admin:s3cret@cam/live", "auth failed for admin:s3cret"},
		{"rtsp://cam/live?password=hunter22", "GET /live?password=hunter22: 401"},
		{"rtsp://admin:p%ss#w/rd@cam/live", "open rtsp://admin:p%ss#w/rd@cam/live: bad URL"},
	} {
		got := scrubMessage(tc.msg, tc.raw)
		for _, secret := range []string{"s3cret", "hunter22", "p%ss#w/rd"} {
			if strings.Contains(got, secret) {
				t.Errorf("scrubMessage(%q) = %q leaks %q", tc.msg, got, secret)
			}
		}
		if !strings.Contains(got, "REDACTED") {
			t.Errorf("scrubMessage(%q) = %q: nothing redacted", tc.msg, got)
		}
	}
}

// TestTrackerMatch: a snapshot gets its own frame's result when it exists, else the newest one
// before it; waiting ends as soon as a result at or past the frame arrives.
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
