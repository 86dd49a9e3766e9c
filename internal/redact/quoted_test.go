package redact

import "testing"

// TestQuoted: credentials a message quotes of URLs vinfer does not know are redacted; ordinary
// text and URLs without credentials are left as they are.
func TestQuoted(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"400 (Bad rtsp://admin:pw@10.0.0.9/x)", "400 (Bad rtsp://REDACTED@10.0.0.9/x)"},
		{"see rtsp://[::1]:554/a?token=abc&x=1 now", "see rtsp://[::1]:554/a?token=REDACTED&x=1 now"},
		{`moved to "rtsp://u:p@h/a;password=z"`, `moved to "rtsp://REDACTED@h/a;password=REDACTED"`},
		{"token=t0k password=Pw0rd passwd=x PWD=y", "token=REDACTED password=REDACTED passwd=REDACTED PWD=REDACTED"},
		{"status code=500 key=frame session=3 tp254 user=bob", "status code=500 key=frame session=3 tp254 user=bob"},
		{"GET http://host:8080/api/streams?limit=5 done", "GET http://host:8080/api/streams?limit=5 done"},
		{"mytoken=abc x-token=abc", "mytoken=abc x-token=abc"},
		{"password=REDACTED: 401", "password=REDACTED: 401"},
		{"no url :// here", "no url :// here"},
		{"at rtsp://admin:pa,s)s@h/x, then", "at rtsp://REDACTED@h/x, then"},
		{"(see rtsp://u:p@h/a).", "(see rtsp://REDACTED@h/a)."},
		{"(token=abc, password=x)", "(token=REDACTED, password=REDACTED)"},
	} {
		if got := Quoted(c.in); got != c.want {
			t.Errorf("Quoted(%q)\n = %q\nwant %q", c.in, got, c.want)
		}
	}
}
