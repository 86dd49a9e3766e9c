package api_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
)

// raw sends a request built by the test (headers as given, no defaults) and returns the
// status and body.
func (e *env) raw(req *http.Request) (int, string) {
	e.t.Helper()
	if e.token != "" && req.Header.Get("Authorization") == "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func (e *env) request(method, path, body string, header ...string) *http.Request {
	e.t.Helper()
	req, err := http.NewRequest(method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	return req
}

// TestSDPFileAttack: rtp://…?sdp=/etc/shadow or /proc/self/environ answered with the file's
// contents (issue 14, item 1). Now refused, naming the file only, in the answer and the log.
func TestSDPFileAttack(t *testing.T) {
	e := start(t, "")
	for _, sdp := range []string{"/etc/shadow", "/proc/self/environ", "/etc/passwd"} {
		body := fmt.Sprintf(`{"id":"x","source":"rtp://127.0.0.1:25004?sdp=%s"}`, sdp)
		code, b := e.raw(e.request("POST", "/api/streams", body, "Content-Type", "application/json"))
		if code != http.StatusForbidden {
			t.Errorf("sdp=%s: %d, want 403: %s", sdp, code, b)
		}
		for _, leak := range []string{"root:", "PATH=", "HOME="} {
			if strings.Contains(b, leak) || strings.Contains(e.logs.String(), leak) {
				t.Fatalf("sdp=%s: the answer or the log quotes the file (%q): %s", sdp, leak, b)
			}
		}
	}
}

// TestLongNameSSRF: a path with a component over 255 bytes reached FFmpeg's URL handling and
// made requests from the server (issue 14, item 2). Now a 400, and nothing is requested.
func TestLongNameSSRF(t *testing.T) {
	var hits atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	defer target.Close()
	host := strings.TrimPrefix(target.URL, "http://")
	e := start(t, "")
	long := strings.Repeat("a", 300)
	for _, src := range []string{"http:" + long + "@" + host + "/x", "tcp:" + long + "@" + host,
		"http:a@" + host + "/x", "subfile:" + long} {
		body := fmt.Sprintf(`{"id":"x","source":%q}`, src)
		code, b := e.raw(e.request("POST", "/api/streams", body, "Content-Type", "application/json"))
		if code < 400 || code >= 500 {
			t.Errorf("%.40s: %d, want a 4xx: %s", src, code, b)
		}
		if strings.Contains(src, long) && code != http.StatusBadRequest {
			t.Errorf("%.40s: %d, want 400 (name too long): %s", src, code, b)
		}
		if status418.MatchString(b) || strings.Contains(b, "Teapot") { // not a port such as 34189
			t.Errorf("the answer tells the remote status: %s", b)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server made %d requests on a client's behalf", n)
	}
}

// TestStreamLimits: adds beyond sources.max_streams are refused with 503 (a bound on what
// requests can make the server hold; the opening bound is tested in package app).
func TestStreamLimits(t *testing.T) {
	e := startWith(t, "", func(c *config.Config) { c.Sources.MaxStreams = 1 }, nil)
	video := asset(t, "videos/car-detection.mp4")
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"a","source":%q,"loop":true}`, video), 201, nil)
	resp, b := e.do("POST", "/api/streams", fmt.Sprintf(`{"id":"b","source":%q}`, video))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "max_streams") || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("second stream: %s %s", resp.Status, b)
	}
}

// TestBrowserGuard: with no token, any page the operator visits could add streams and reload
// models (a POST without a content type needs no preflight), DNS rebinding could read
// snapshots, and a cross-origin WebSocket was accepted (issue 14, item 4). With a token the
// same checks hold.
func TestBrowserGuard(t *testing.T) {
	for _, token := range []string{"", "s3cr3t-token"} {
		t.Run(fmt.Sprintf("token=%v", token != ""), func(t *testing.T) {
			e := start(t, token)
			self := e.url // http://127.0.0.1:PORT
			evil := "http://evil.example"
			reload := "/api/models/yolox/reload"
			for _, c := range []struct {
				name   string
				req    *http.Request
				code   int
				errSay string
			}{
				{"rebinding: foreign Host", e.request("GET", "/api/streams", "", "Host", "evil.example:8080"), 421, "not a name of this server"},
				{"rebinding: snapshot", e.request("GET", "/api/streams/x/snapshot.jpg", "", "Host", "rebind.evil.example"), 421, "allowed_hosts"},
				{"cross-site POST without type", e.request("POST", reload, "", "Origin", evil), 403, "cross-origin"},
				{"cross-site form POST", e.request("POST", "/api/streams", `id=x`, "Origin", evil, "Content-Type", "application/x-www-form-urlencoded"), 403, "cross-origin"},
				{"cross-site JSON POST", e.request("POST", reload, "", "Origin", evil, "Content-Type", "application/json"), 403, "cross-origin"},
				{"null origin", e.request("DELETE", "/api/streams/x", "", "Origin", "null"), 403, "cross-origin"},
				{"fetch metadata", e.request("POST", reload, "", "Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"), 403, "another site"},
				{"POST without type", e.request("POST", reload, ""), 415, "application/json"},
				{"POST as text", e.request("POST", "/api/streams", `{"id":"x","source":"y"}`, "Content-Type", "text/plain"), 415, "application/json"},
				{"PUT without type", e.request("PUT", "/api/streams/x/scene", `{"lines":[]}`), 415, "application/json"},
				{"PUT as text", e.request("PUT", "/api/streams/x/scene", `{"lines":[]}`, "Content-Type", "text/plain"), 415, "application/json"},
				{"PUT as form", e.request("PUT", "/api/streams/x/scene", `lines=`, "Content-Type", "application/x-www-form-urlencoded"), 415, "application/json"},
				{"PUT as JSON", e.request("PUT", "/api/streams/x/scene", `{"lines":[]}`, "Content-Type", "application/json; charset=utf-8"), 404, "no stream"},
				{"same origin", e.request("POST", reload, "", "Origin", self, "Content-Type", "application/json"), 200, ""},
				{"localhost Host", e.request("GET", "/api/models", "", "Host", "localhost"), 200, ""},
				{"no Origin (curl)", e.request("POST", reload, "", "Content-Type", "application/json"), 200, ""},
			} {
				code, b := e.raw(c.req)
				if code != c.code || !strings.Contains(b, c.errSay) {
					t.Errorf("%s: %d %s, want %d saying %q", c.name, code, b, c.code, c.errSay)
				}
			}
			ws := strings.Replace(e.url, "http", "ws", 1) + "/api/ws"
			if token != "" {
				ws += "?access_token=" + token
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			c, resp, err := websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {evil}}})
			if err == nil {
				c.CloseNow()
				t.Fatal("cross-origin WebSocket accepted")
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Fatalf("cross-origin WebSocket: %v", err)
			}
			c, _, err = websocket.Dial(ctx, ws, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {self}}})
			if err != nil {
				t.Fatalf("same-origin WebSocket: %v", err)
			}
			c.CloseNow()
			if !strings.Contains(e.logs.String(), "api: audit") {
				t.Fatal("no audit line for the state-changing calls")
			}
			if token != "" && strings.Contains(e.logs.String(), token) {
				t.Fatal("the log shows the token")
			}
		})
	}
}

// TestAllowedOriginsConfigured: a configured origin may change state; others still may not.
func TestAllowedOriginsConfigured(t *testing.T) {
	e := startWith(t, "", nil, func(s *api.Server) {
		s.AllowedOrigins = []string{"https://console.example"}
		s.AllowedHosts = []string{"vinfer.internal"}
	})
	reload := "/api/models/yolox/reload"
	if code, b := e.raw(e.request("POST", reload, "", "Origin", "https://console.example", "Content-Type", "application/json")); code != 200 {
		t.Fatalf("configured origin: %d %s", code, b)
	}
	if code, b := e.raw(e.request("GET", "/api/models", "", "Host", "vinfer.internal:8080")); code != 200 {
		t.Fatalf("configured host: %d %s", code, b)
	}
	if code, _ := e.raw(e.request("POST", reload, "", "Origin", "https://other.example", "Content-Type", "application/json")); code != 403 {
		t.Fatalf("other origin: %d", code)
	}
}

// TestInsecureBind: listening beyond loopback without a token is refused unless insecure.
func TestInsecureBind(t *testing.T) {
	e := start(t, "")
	s := &api.Server{App: e.app, Addr: "0.0.0.0:0"}
	if err := s.Start(); !errors.Is(err, api.ErrInsecure) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Start on 0.0.0.0 without a token: %v, want ErrInsecure", err)
	}
	s = &api.Server{App: e.app, Addr: "0.0.0.0:0", Insecure: true}
	if err := s.Start(); err != nil {
		t.Fatalf("Start with Insecure: %v", err)
	}
	s.Close()
}

// TestTrickledBody: a body sent at one byte per 5 s held its connection open for good (issue
// 14, item 7); now the server gives up after BodyTimeout.
func TestTrickledBody(t *testing.T) {
	e := startWith(t, "", nil, func(s *api.Server) { s.BodyTimeout = 500 * time.Millisecond })
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/streams HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	}()
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		t.Fatal("the trickled request was still held open after 30 s")
	}
	if err == nil && resp.StatusCode != http.StatusRequestTimeout {
		t.Fatalf("trickled body: %s, want 408", resp.Status)
	}
}

var status418 = regexp.MustCompile(`(^|[^0-9])418([^0-9]|$)`)

// TestStalledBody: a body that stops arriving (Content-Length 1000, one byte sent) held its
// connection for good: the handler gave up after BodyTimeout, but the server then waited, with
// no deadline, for the rest of the body before sending the 408. Now the 408 goes out and the
// connection is closed within BodyTimeout (and a margin), on POST and on PUT; and an event
// stream sent with a body that stalls starts at once instead of waiting for it.
func TestStalledBody(t *testing.T) {
	const bodyTimeout = time.Second
	e := startWith(t, "", nil, func(s *api.Server) { s.BodyTimeout = bodyTimeout })
	video := asset(t, "videos/car-detection.mp4")
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"cars","source":%q,"loop":true}`, video), 201, nil)
	for _, path := range []string{"POST /api/streams", "PUT /api/streams/cars/scene", "GET /api/events"} {
		t.Run(path, func(t *testing.T) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			fmt.Fprintf(conn, "%s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{", path)
			// Generous for a loaded machine, far below "never".
			_ = conn.SetReadDeadline(start.Add(bodyTimeout + 15*time.Second))
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no response %v after the body stalled: %v", time.Since(start).Round(time.Millisecond), err)
			}
			if strings.HasPrefix(path, "GET") {
				// The event stream does not read the body; it must not wait for it either.
				if resp.StatusCode != http.StatusOK || !resp.Close {
					t.Fatalf("event stream with a stalled body: %s %v", resp.Status, resp.Header)
				}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(string(b), "did not arrive in time") {
				t.Fatalf("stalled body: %s %s, want 408", resp.Status, b)
			}
			if !resp.Close {
				t.Fatalf("408 without Connection: close: %v", resp.Header)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("the connection stayed open after the 408: %v", err)
			}
			t.Logf("408 and EOF after %v", time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestFramingRefused: any site could frame the page (clickjacking). Every response, the page,
// its assets, the API, errors and refusals, now says that no page may frame it.
func TestFramingRefused(t *testing.T) {
	for _, token := range []string{"", "s3cr3t-token"} {
		t.Run(fmt.Sprintf("token=%v", token != ""), func(t *testing.T) {
			e := start(t, token)
			for _, req := range []*http.Request{
				e.request("GET", "/", ""), e.request("GET", "/app.js", ""), e.request("GET", "/style.css", ""),
				e.request("GET", "/healthz", ""), e.request("GET", "/readyz", ""), e.request("GET", "/api/streams", ""),
				e.request("GET", "/metrics", ""), e.request("GET", "/api/nothing", ""), e.request("GET", "/nothing", ""),
				e.request("GET", "/api/streams", "", "Host", "evil.example"),          // 421
				e.request("POST", "/api/streams", "{}", "Content-Type", "text/plain"), // 415
				e.request("GET", "/api/streams", "", "Authorization", "Bearer wrong"), // 401 with a token
			} {
				if e.token != "" && req.Header.Get("Authorization") == "" {
					req.Header.Set("Authorization", "Bearer "+e.token)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				csp := resp.Header.Get("Content-Security-Policy")
				if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(csp, "frame-ancestors 'none'") ||
					!strings.Contains(csp, "default-src 'self'") {
					t.Errorf("%s %s (%s): X-Frame-Options %q, Content-Security-Policy %q", req.Method, req.URL.Path,
						resp.Status, resp.Header.Get("X-Frame-Options"), csp)
				}
			}
		})
	}
}
