package api_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/upsim"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestGB28181Upstream: GET /api/gb28181/upstream shows each upper platform's registration and
// counters, never its password; 404 without upstream entries.
func TestGB28181Upstream(t *testing.T) {
	const upper, pass = "34020000002000000001", "api-up-secret"
	up := upsim.New(t, "UDP", upper, pass)
	e := startWith(t, "", func(c *config.Config) {
		c.GB28181 = &config.GB28181{ID: "34020000002000000079", Listen: "127.0.0.1:0", MediaPorts: "47120-47130",
			Upstream: []config.GB28181Upstream{{ServerID: upper, Address: up.Addr(), Password: pass, Local: "127.0.0.1:0",
				Channels: []config.GB28181UpChannel{{ID: "34020000001320000031", Stream: "cam"}}}}}
	}, nil)
	var ups []defs.GB28181Upstream
	testutil.Eventually(t, 30*time.Second, "registered, as the API shows", func() bool {
		body := e.want("GET", "/api/gb28181/upstream", "", http.StatusOK, nil)
		if strings.Contains(string(body), pass) {
			t.Fatalf("password in %s", body)
		}
		if err := json.Unmarshal(body, &ups); err != nil {
			t.Fatal(err)
		}
		return len(ups) == 1 && ups[0].Registered
	})
	if ups[0].ServerID != upper || ups[0].Counters["registrations"] < 1 || ups[0].Transport != "udp" {
		t.Fatalf("%+v", ups[0])
	}
	plain := start(t, "")
	plain.want("GET", "/api/gb28181/upstream", "", http.StatusNotFound, nil)
}
