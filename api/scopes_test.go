package api_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
)

// Secrets of the scoped-token tests: output.token (admin) and one token of each scope.
const (
	adminSecret    = "admin-secret-0123456789"
	operatorSecret = "operator-secret-0123456"
	viewerSecret   = "viewer-secret-012345678"
	camSecret      = "cam-only-secret-0123456"
	camOpSecret    = "cam-operator-secret-012"
)

// scopedEnv starts the server with output.token and tokens of each scope, two of them limited
// to stream "cam", the operator ones at rate calls a minute (0: none).
func scopedEnv(t *testing.T, rate int) *env {
	t.Helper()
	return startWith(t, adminSecret, nil, func(s *api.Server) {
		s.Tokens = []config.Token{
			{Label: "ops", Token: operatorSecret, Scope: config.ScopeOperator, RatePerMinute: rate},
			{Label: "wall", Token: viewerSecret, Scope: config.ScopeViewer},
			{Label: "cam-wall", Token: camSecret, Scope: config.ScopeViewer, Streams: []string{"cam"}},
			{Label: "cam-ops", Token: camOpSecret, Scope: config.ScopeOperator, Streams: []string{"cam"}, RatePerMinute: rate},
		}
	})
}

// status sends method path with token and returns the status code, without reading the body
// (an event stream never ends).
func status(t *testing.T, e *env, method, path, body, token string) int {
	t.Helper()
	var rd *strings.Reader
	if body == "" {
		body = "{}"
	}
	rd = strings.NewReader(body)
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// concrete fills a route pattern's wildcards: stream "cam", other names "x"; the debug routes
// that run for a time are asked for one second.
func concrete(pattern string) string {
	p := strings.ReplaceAll(strings.ReplaceAll(pattern, "{id}", "cam"), "{name}", "x")
	if strings.HasPrefix(p, "/debug/") {
		p += "?seconds=1"
	}
	return p
}

// TestRouteScopes: every route behind the token check declares the scope each of its methods
// needs (issue 25, item 7): a route registered without one, or a method it serves that is not
// declared, fails here. Each scope's token is tried against every route and method: allowed
// (any answer but 401 or 403) exactly when its scope reaches the declared one, else 403.
func TestRouteScopes(t *testing.T) {
	e := scopedEnv(t, 0)
	declared := api.RouteScopes()
	routed := api.Routed(e.srv)
	if len(routed) == 0 {
		t.Fatal("no routes registered")
	}
	for _, p := range routed {
		if _, ok := declared[p]; !ok {
			t.Errorf("route %s has no declared scope (api/scopes.go routeAccess)", p)
		}
	}
	for p := range declared { // a stale entry grants nothing; said, not failed
		if !slices.Contains(routed, p) {
			t.Logf("routeAccess declares %s, which is not registered", p)
		}
	}
	// A method the route serves (admin gets anything but 405) must be declared.
	for _, p := range routed {
		for _, m := range []string{"GET", "POST", "PUT", "DELETE", "PATCH"} {
			_, ok := declared[p][m]
			if _, any := declared[p]["*"]; ok || any {
				continue
			}
			if code := status(t, e, m, concrete(p), "", adminSecret); code != http.StatusMethodNotAllowed {
				t.Errorf("%s %s answers %d but declares no scope for %s", m, p, code, m)
			}
		}
	}
	rank := map[string]int{"viewer": 1, "operator": 2, "admin": 3}
	tokens := []struct{ scope, secret string }{{"viewer", viewerSecret}, {"operator", operatorSecret}, {"admin", adminSecret}}
	for p, methods := range declared {
		if !slices.Contains(routed, p) {
			continue
		}
		for m, need := range methods {
			if m == "*" {
				m = "GET"
			}
			for _, tk := range tokens {
				code := status(t, e, m, concrete(p), "", tk.secret)
				allowed := rank[tk.scope] >= rank[need]
				switch {
				case allowed && (code == http.StatusForbidden || code == http.StatusUnauthorized):
					t.Errorf("%s %s with the %s token: %d, want it allowed (needs %s)", m, p, tk.scope, code, need)
				case !allowed && code != http.StatusForbidden:
					t.Errorf("%s %s with the %s token: %d, want 403 (needs %s)", m, p, tk.scope, code, need)
				}
			}
		}
	}
}

// TestTokenStreams: a token limited to stream "cam" reaches cam's routes, not another
// stream's, not the routes about no one stream, and sees only cam in the list; an operator
// limited so adds cam, not another id.
func TestTokenStreams(t *testing.T) {
	e := scopedEnv(t, 0)
	video := asset(t, "videos/car-detection.mp4")
	for _, id := range []string{"cam", "other"} {
		e.want("POST", "/api/streams", `{"id":"`+id+`","source":"`+video+`","loop":true}`, 201, nil)
	}
	for _, c := range []struct {
		path string
		want int
	}{
		{"/api/streams/cam", 200},
		{"/api/streams/other", 403},
		{"/api/streams/other/scene", 403},
		{"/api/streams/cam/scene", 200},
		{"/api/models", 403},
		{"/metrics", 403},
		{"/api/evidence?stream=other", 403},
		{"/api", 200},
	} {
		if code := status(t, e, "GET", c.path, "", camSecret); code != c.want {
			t.Errorf("GET %s with the cam token: %d, want %d", c.path, code, c.want)
		}
	}
	if code := status(t, e, "GET", "/api/events", "", camSecret); code != 403 {
		t.Errorf("GET /api/events without ?stream= with the cam token: %d, want 403", code)
	}
	if code := status(t, e, "GET", "/api/events?stream=cam", "", camSecret); code != 200 {
		t.Errorf("GET /api/events?stream=cam with the cam token: %d, want 200", code)
	}
	var list struct{ Streams []struct{ ID string } }
	resp, b := e.doToken("GET", "/api/streams", "", camSecret)
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"cam"`) || strings.Contains(string(b), `"other"`) {
		t.Fatalf("list with the cam token: %s %s, want cam only", resp.Status, b)
	}
	_ = list
	if code := status(t, e, "DELETE", "/api/streams/cam", "", camSecret); code != 403 {
		t.Errorf("DELETE with the cam viewer token: %d, want 403", code)
	}
	if code := status(t, e, "DELETE", "/api/streams/other", "", camOpSecret); code != 403 {
		t.Errorf("DELETE other with the cam operator token: %d, want 403", code)
	}
	if code := status(t, e, "DELETE", "/api/streams/cam", "", camOpSecret); code != 204 {
		t.Errorf("DELETE cam with the cam operator token: %d, want 204", code)
	}
	if code := status(t, e, "POST", "/api/streams", `{"id":"intruder","source":"`+video+`"}`, camOpSecret); code != 403 {
		t.Errorf("add of another id with the cam operator token: %d, want 403", code)
	}
	if code := status(t, e, "POST", "/api/streams", `{"id":"cam","source":"`+video+`","loop":true}`, camOpSecret); code != 201 {
		t.Errorf("add of cam with the cam operator token: %d, want 201", code)
	}
}

// TestTokenRate: past its rate_per_minute, a token's state-changing calls get 429 with
// Retry-After, its reads do not, and other tokens are not held by it; the audit line names the
// token's label, never its secret.
func TestTokenRate(t *testing.T) {
	e := scopedEnv(t, 2)
	for i := range 2 {
		if code := status(t, e, "DELETE", "/api/streams/none", "", operatorSecret); code != 404 {
			t.Fatalf("call %d within the rate: %d, want 404", i, code)
		}
	}
	req, _ := http.NewRequest("DELETE", e.url+"/api/streams/none", nil)
	req.Header.Set("Authorization", "Bearer "+operatorSecret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if s, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != http.StatusTooManyRequests || s < 1 {
		t.Fatalf("third call in a minute: %s Retry-After %q, want 429 with seconds", resp.Status, resp.Header.Get("Retry-After"))
	}
	if code := status(t, e, "GET", "/api/streams", "", operatorSecret); code != 200 {
		t.Errorf("a read past the rate: %d, want 200", code)
	}
	if code := status(t, e, "DELETE", "/api/streams/none", "", camOpSecret); code != 403 {
		t.Errorf("another token: %d, want 403 (its own limits), not 429", code)
	}
	if code := status(t, e, "DELETE", "/api/streams/none", "", adminSecret); code != 404 {
		t.Errorf("the admin token: %d, want 404", code)
	}
	logs := e.logs.String()
	for _, want := range []string{"who=ops", "status=429", "who=token", "who=cam-ops"} {
		if !strings.Contains(logs, want) {
			t.Errorf("audit lines lack %q", want)
		}
	}
	for _, secret := range []string{operatorSecret, adminSecret, camOpSecret} {
		if strings.Contains(logs, secret) {
			t.Errorf("a log line holds a secret")
		}
	}
}
