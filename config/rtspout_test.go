package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestRTSPOut: output.rtsp parses; the password falls back to the API token and never shows
// in JSON; a listener beyond loopback needs a password (or insecure), bad bounds are errors.
func TestRTSPOut(t *testing.T) {
	c, err := Parse([]byte(`
output:
  token: api-secret-0123456789
  rtsp: {listen: "0.0.0.0:8554", max_clients: 4, write_queue: 256, udp_port: 8000}
`))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Output.RTSP; r.Listen != "0.0.0.0:8554" || r.MaxClients != 4 || r.WriteQueue != 256 || r.UDPPort != 8000 || c.Output.RTSPPassword() != "api-secret-0123456789" {
		t.Fatalf("%+v", r)
	}
	c, err = Parse([]byte("output:\n  rtsp: {password: rtsp-secret-0123456789, user: vms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Output.RTSPPassword() != "rtsp-secret-0123456789" || c.Output.RTSP.User != "vms" {
		t.Fatalf("%+v", c.Output.RTSP)
	}
	if b, _ := json.Marshal(c.Output); strings.Contains(string(b), "rtsp-secret") {
		t.Fatalf("password in JSON: %s", b)
	}
	for _, bad := range []string{
		`rtsp: {listen: "0.0.0.0:8554"}`,
		`rtsp: {listen: "8554"}`,
		`rtsp: {listen: "127.0.0.1:99999"}`,
		`rtsp: {max_clients: -1}`,
		`rtsp: {write_queue: 100}`,
		`rtsp: {write_queue: 8}`,
		`rtsp: {udp_port: 5001}`,
	} {
		if _, err := Parse([]byte("output:\n  " + bad + "\n")); !errors.Is(err, ErrRTSPOut) {
			t.Errorf("%s: %v, want ErrRTSPOut", bad, err)
		}
	}
	if _, err := Parse([]byte("output:\n  insecure: true\n  rtsp: {listen: \"0.0.0.0:8554\"}\n")); err != nil {
		t.Errorf("insecure: %v", err)
	}
}
