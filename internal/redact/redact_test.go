package redact

import (
	"strings"
	"testing"
)

func TestRedact(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"rtsp://admin:s3cret@192.168.1.64:554/Streaming/Channels/101", "rtsp://REDACTED@192.168.1.64:554/Streaming/Channels/101"},
		{"rtsp://admin@cam/live", "rtsp://REDACTED@cam/live"},
		{"rtsp://cam:554/live", "rtsp://cam:554/live"},
		{"rtsp://cam/cam/realmonitor?channel=1&subtype=0&user=admin&password=abc", "rtsp://cam/cam/realmonitor?channel=1&subtype=0&user=REDACTED&password=REDACTED"},
		{"rtsp://cam/live?Token=xyz#frag", "rtsp://cam/live?Token=REDACTED"},
		{"rtsp://admin:p%ss#w/rd@cam:554/live", "rtsp://cam:554/REDACTED"},
		{"rtsp://cam/live?access_token=xyz&apikey=abc", "rtsp://cam/live?access_token=REDACTED&apikey=REDACTED"},
		{"rtsp://cam/live?API_KEY=xyz&X-Api-Key=abc", "rtsp://cam/live?API_KEY=REDACTED&X-Api-Key=REDACTED"},
		{"admin:secret", "REDACTED"},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"s3cret", "admin", "abc", "xyz", "p%ss", "secret"} {
			if strings.Contains(got, secret) {
				t.Errorf("URL(%q) = %q leaks %q", tc.in, got, secret)
			}
		}
	}
}

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
		if got := Source(tc.in); got != tc.want {
			t.Errorf("Source(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestScrubMessage(t *testing.T) {
	for _, tc := range []struct{ raw, msg string }{
		{"rtsp://admin:s3cret@cam/live", "stream x: dial rtsp://admin:s3cret@cam/live: refused"},
		{"rtsp://admin:s3cret@cam/live", "auth failed for admin:s3cret"},
		{"rtsp://cam/live?password=hunter22", "GET /live?password=hunter22: 401"},
		{"rtsp://admin:p%ss#w/rd@cam/live", "open rtsp://admin:p%ss#w/rd@cam/live: bad URL"},
		// url.Parse quotes the part after '#' as an invalid port: ":p%ss" must not survive
		{"rtsp://admin:p%ss#w/rd@cam/live", `parse "rtsp://admin:p%ss#w/rd@cam/live": invalid port ":p%ss" after host`},
		{"rtsp://cam/live?access_token=hunter22", "GET /live?access_token=hunter22: 401"},
	} {
		got := Message(tc.msg, tc.raw)
		for _, secret := range []string{"s3cret", "hunter22", "p%ss#w/rd", "p%ss", "w/rd"} {
			if strings.Contains(got, secret) {
				t.Errorf("Message(%q) = %q leaks %q", tc.msg, got, secret)
			}
		}
		if !strings.Contains(got, "REDACTED") {
			t.Errorf("Message(%q) = %q: nothing redacted", tc.msg, got)
		}
	}
}

// TestTrackerMatch: a snapshot gets its own frame's result when it exists, else the newest one
// before it; waiting ends as soon as a result at or past the frame arrives.
