package api_test

import (
	"strings"
	"testing"

	"io"
	"net/http"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestAuthBeforeContentType: a POST without Content-Type from a client with no token, a wrong
// token or too small a scope was answered 415, and the audit log said who=unauthenticated for
// it: the server told an unauthenticated client what it would accept. Authentication and the
// scope check now come first (401, 403); only an authorised client learns about the type.
func TestAuthBeforeContentType(t *testing.T) {
	e := scopedEnv(t, 0)
	reload := "/api/models/yolox/reload"
	for _, c := range []struct {
		name   string
		auth   string
		code   int
		errSay string
	}{
		{"no token", "", 401, "missing bearer token"},
		{"wrong token", "Bearer wrong-token-0123456789", 401, "wrong bearer token"},
		{"viewer token", "Bearer " + viewerSecret, 403, "scope"},
		{"admin token", "Bearer " + adminSecret, 415, "application/json"},
	} {
		req := e.request("POST", reload, "")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		code, b := resp.StatusCode, string(body)
		if code != c.code || !strings.Contains(b, c.errSay) {
			t.Errorf("%s: %d %s, want %d saying %q", c.name, code, b, c.code, c.errSay)
		}
	}
	testutil.Eventually(t, 20*time.Second, "the audit lines of the four requests", func() bool {
		return strings.Count(e.logs.String(), "api: audit") >= 4
	})
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, "api: audit") && strings.Contains(line, "status=415") && strings.Contains(line, "who=unauthenticated") {
			t.Errorf("a 415 audited for an unauthenticated client: %s", line)
		}
	}
}
