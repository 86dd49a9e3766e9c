package onvif_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/onvif"
)

// A device that answers too much, not SOAP, or not at all gets a clear error within the
// client's timeout; one that reports its services on another host, or a stream URI with
// credentials or of another scheme, is held to its own host without them.
func TestHostileDevice(t *testing.T) {
	t.Parallel()
	reply := func(body string) string {
		return `<?xml version="1.0"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>` + body + `</s:Body></s:Envelope>`
	}
	var caps, uri string
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := make([]byte, 4096)
		n, _ := r.Body.Read(b)
		req := string(b[:n])
		switch {
		case strings.Contains(r.URL.Path, "huge"):
			w.Write([]byte(reply(strings.Repeat("<x>", 1<<19))))
		case strings.Contains(r.URL.Path, "html"):
			w.Write([]byte("<html><body>login</body></html>"))
		case strings.Contains(r.URL.Path, "hang"):
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		case strings.Contains(req, "GetSystemDateAndTime"):
			w.WriteHeader(http.StatusBadRequest)
		case strings.Contains(req, "GetCapabilities"):
			w.Write([]byte(caps))
		case strings.Contains(req, "GetStreamUri"):
			w.Write([]byte(reply(`<GetStreamUriResponse><MediaUri><Uri>` + uri + `</Uri></MediaUri></GetStreamUriResponse>`)))
		}
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	// The media service reported on another host (a cloud metadata address): asked on the device's.
	caps = reply(`<GetCapabilitiesResponse><Capabilities><Media><XAddr>http://169.254.169.254:` + port +
		`/onvif/media</XAddr></Media></Capabilities></GetCapabilitiesResponse>`)
	ctx := context.Background()
	for _, path := range []string{"/huge", "/html"} {
		c := &onvif.Client{XAddr: srv.URL + path, User: "u", Password: "p"}
		if _, err := c.Profiles(ctx); !errors.Is(err, onvif.ErrReply) {
			t.Fatalf("%s: %v, want ErrReply", path, err)
		}
	}
	c := &onvif.Client{XAddr: srv.URL + "/hang", Timeout: 500 * time.Millisecond}
	start := time.Now()
	if _, err := c.Profiles(ctx); err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a device that never answers: %v", err)
	}
	t.Logf("gave up after %v", time.Since(start).Round(time.Millisecond))

	host := strings.TrimPrefix(srv.URL, "http://")
	for in, want := range map[string]string{
		"rtsp://10.0.0.5:554/live":             "rtsp://127.0.0.1:554/live",
		"rtsp://root:pw@10.0.0.5/live?ch=1":    "rtsp://127.0.0.1/live?ch=1",
		"http://10.0.0.5/snapshot":             "",
		"file:///etc/passwd":                   "",
		"rtsps://[fe80::1]:322/x":              "rtsps://127.0.0.1:322/x",
		"rtsp://" + host + "/unchanged/path/1": "rtsp://" + host + "/unchanged/path/1",
	} {
		uri = in
		c := &onvif.Client{XAddr: srv.URL + "/onvif/device_service"}
		got, err := c.StreamURI(ctx, "p")
		if want == "" {
			if !errors.Is(err, onvif.ErrReply) {
				t.Fatalf("%s: %q %v, want ErrReply", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Fatalf("%s: %q %v, want %q", in, got, err, want)
		}
	}
}
