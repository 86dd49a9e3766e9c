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

// TestRedactSignedURLs: presigned URLs (S3, GCS, Azure SAS, CloudFront) carry their credentials
// in query parameters, and RTSP URLs may carry them as path parameters (/path;password=…).
func TestRedactSignedURLs(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"rtsp://cam/live?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAEXAMPLE%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token=FQoGZXIvYXdzEXAMPLE&X-Amz-Signature=deadbeefcafe",
			"rtsp://cam/live?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=REDACTED&X-Amz-Date=20250101T000000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Security-Token=REDACTED&X-Amz-Signature=REDACTED"},
		{"rtsp://cam/live?AWSAccessKeyId=AKIAEXAMPLE&Expires=1700000000&Signature=deadbeefcafe",
			"rtsp://cam/live?AWSAccessKeyId=REDACTED&Expires=1700000000&Signature=REDACTED"},
		{"rtsp://cam/live?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=svc%40proj&X-Goog-Signature=deadbeefcafe",
			"rtsp://cam/live?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=REDACTED&X-Goog-Signature=REDACTED"},
		{"rtsp://cam/live?sv=2022-11-02&se=2030-01-01&sp=r&sig=deadbeefcafe", "rtsp://cam/live?sv=2022-11-02&se=2030-01-01&sp=r&sig=REDACTED"},
		{"rtsp://cam/live?Expires=1700000000&Key-Pair-Id=APKAEXAMPLE&Signature=deadbeefcafe",
			"rtsp://cam/live?Expires=1700000000&Key-Pair-Id=REDACTED&Signature=REDACTED"},
		// RTSP path parameters (RFC 2326 §3.2): in any segment, with other parameters kept.
		{"rtsp://cam:554/x;password=deadbeefcafe", "rtsp://cam:554/x;password=REDACTED"},
		{"rtsp://cam/live;user=admin;password=deadbeefcafe;stream=1/track1", "rtsp://cam/live;user=REDACTED;password=REDACTED;stream=1/track1"},
		{"rtsp://cam/a;token=deadbeefcafe/b;Signature=deadbeefcafe?channel=1", "rtsp://cam/a;token=REDACTED/b;Signature=REDACTED?channel=1"},
		{"rtsp://cam/live;mode=play", "rtsp://cam/live;mode=play"},
	} {
		got := URL(tc.in)
		if got != tc.want {
			t.Errorf("URL(%q)\n = %q\nwant %q", tc.in, got, tc.want)
		}
		for _, secret := range []string{"deadbeefcafe", "AKIAEXAMPLE", "FQoGZXIvYXdzEXAMPLE", "svc", "admin", "APKAEXAMPLE"} {
			if strings.Contains(got, secret) {
				t.Errorf("URL(%q) = %q leaks %q", tc.in, got, secret)
			}
		}
	}
}

// TestScrubMessageSignedURLs: a message quoting a request path (gortsplib does) keeps no
// signature or path-parameter secret.
func TestScrubMessageSignedURLs(t *testing.T) {
	for _, tc := range []struct{ raw, msg string }{
		{"rtsp://cam/live?X-Amz-Credential=AKIAEXAMPLE&X-Amz-Signature=deadbeefcafe", "DESCRIBE /live?X-Amz-Signature=deadbeefcafe&X-Amz-Credential=AKIAEXAMPLE: 403"},
		{"rtsp://cam/live?X-Amz-Signature=deadbeefcafe", "signature deadbeefcafe does not match"},
		{"rtsp://cam:554/x;password=deadbeefcafe", "DESCRIBE rtsp://cam:554/x;password=deadbeefcafe RTSP/1.0: 401"},
		{"rtsp://cam:554/x;password=deadbeefcafe", "path /x;password=deadbeefcafe refused"},
		{"rtsp://cam:554/x;password=deadbeefcafe", "wrong password deadbeefcafe"},
	} {
		got := Message(tc.msg, tc.raw)
		for _, secret := range []string{"deadbeefcafe", "AKIAEXAMPLE"} {
			if strings.Contains(got, secret) {
				t.Errorf("Message(%q) = %q leaks %q", tc.msg, got, secret)
			}
		}
		if !strings.Contains(got, "REDACTED") {
			t.Errorf("Message(%q) = %q: nothing redacted", tc.msg, got)
		}
	}
}

// TestScrubMessageUserName: the user name is redacted where it is quoted as a user (user:…,
// user@…, user=…), not as a word: a camera user "URL" or "source" turned "source URL does not
// parse" into "source REDACTED does not parse".
func TestScrubMessageUserName(t *testing.T) {
	for _, tc := range []struct{ raw, msg, want string }{
		// unparsable (the password has '#'): the path that quoted every 3-byte piece
		{"rtsp://URL:p4ss#word@cam/live", "source URL does not parse: rtsp://URL:p4ss#word@cam/live",
			"source URL does not parse: rtsp://cam/REDACTED"},
		{"rtsp://URL:p4ss#word@cam/live", "auth URL:p4ss#word@cam refused for URL",
			"auth REDACTED@cam refused for URL"},
		{"rtsp://source:p4ss#word@cam/live", "source does not parse (user source:REDACTED)",
			"source does not parse (user REDACTED:REDACTED)"},
		// parsed
		{"rtsp://stream:s3cret@cam/live", "stream cam1: auth failed for stream:s3cret",
			"stream cam1: auth failed for REDACTED:REDACTED"},
		{"rtsp://stream:s3cret@cam/live", "stream x: user stream@cam refused",
			"stream x: user REDACTED@cam refused"},
		{"rtsp://admin@cam/live", "admin stream, 401 for admin@cam (webadmin:x)", "admin stream, 401 for REDACTED@cam (webadmin:x)"},
		// a user name in a query parameter: only its user=… form
		{"rtsp://cam/live?user=camera&password=hunter22", "camera cam1: GET /live?user=camera&password=hunter22: 401",
			"camera cam1: GET /live?user=REDACTED&password=REDACTED: 401"},
	} {
		if got := Message(tc.msg, tc.raw); got != tc.want {
			t.Errorf("Message(%q, %q)\n = %q\nwant %q", tc.msg, tc.raw, got, tc.want)
		}
	}
}

// TestScrubMessageValueNotSubstring: a short password is redacted where it stands as a value,
// never inside an unrelated word (issue 25, item 8: a one-letter password "p" turned the stream
// id "tp254" into "tREDACTED254").
func TestScrubMessageValueNotSubstring(t *testing.T) {
	for _, tc := range []struct{ raw, msg, want string }{
		{"rtsp://admin:p@cam/tp254", "stream tp254: dial rtsp://admin:p@cam/tp254: auth p refused (\"p\")",
			"stream tp254: dial rtsp://REDACTED@cam/tp254: auth REDACTED refused (\"REDACTED\")"},
		{"rtsp://admin:p@cam/tp254", "stream tp254: admin:p rejected", "stream tp254: REDACTED:REDACTED rejected"},
		{"rtsp://u:live@cam/live2", "live2 live stream: password live", "live2 REDACTED stream: password REDACTED"},
		{"rtsp://cam/x?password=cam1&stream=cam12", "cam12: password=cam1 (cam1)", "cam12: password=REDACTED (REDACTED)"},
		{"rtsp://u:p%40ss@cam/live", "auth u:p%40ss failed (p@ss)", "auth REDACTED:REDACTED failed (REDACTED)"},
		{"rtsp://u:p4ss#word@cam/x", "invalid port \":p4ss\" after host, p4ssword", "invalid port \":REDACTED\" after host, p4ssword"},
	} {
		if got := Message(tc.msg, tc.raw); got != tc.want {
			t.Errorf("Message(%q, %q)\n = %q\nwant %q", tc.msg, tc.raw, got, tc.want)
		}
	}
}
