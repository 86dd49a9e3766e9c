package rtsp

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
		{"admin:secret", "REDACTED"},
	} {
		got := Redact(tc.in)
		if got != tc.want {
			t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"s3cret", "admin", "abc", "xyz", "p%ss", "secret"} {
			if strings.Contains(got, secret) {
				t.Errorf("Redact(%q) = %q leaks %q", tc.in, got, secret)
			}
		}
	}
}
