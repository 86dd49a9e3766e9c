package config

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestGB28181Upstream: an upstream entry gets its defaults (domain, transport, device id,
// timers, priority, channel names); each mistake is an error naming the field; the password
// is never in the section's JSON.
func TestGB28181Upstream(t *testing.T) {
	c, err := Parse([]byte(`
gb28181:
  id: "34020000002000000001"
  upstream:
    - server_id: "44010000002000000001"
      address: 192.0.2.7:5060
      password: up-secret
      channels: [{id: "34020000001320000001", stream: cam1}]
`))
	if err != nil {
		t.Fatal(err)
	}
	u := c.GB28181.Upstream[0]
	if u.Domain != "4401000000" || u.Transport != "udp" || u.DeviceID != "34020000002000000001" || u.Local != DefaultGBUpLocal ||
		u.Expires != Duration(DefaultGBUpExpires) || u.Keepalive != Duration(DefaultGBUpKeepalive) || u.AlarmPriority != 3 || u.Channels[0].Name != "cam1" {
		t.Fatalf("%+v", u)
	}
	b, _ := json.Marshal(c.GB28181)
	if strings.Contains(string(b), "up-secret") {
		t.Fatalf("password in %s", b)
	}
	const base = `gb28181: {id: "34020000002000000001", upstream: [`
	for _, bad := range []string{
		`{server_id: "1", address: "h:1", channels: [{id: "34020000001320000001", stream: a}]}]}`,
		`{server_id: "44010000002000000001", address: "nohost", channels: [{id: "34020000001320000001", stream: a}]}]}`,
		`{server_id: "44010000002000000001", address: "h:1", transport: tls, channels: [{id: "34020000001320000001", stream: a}]}]}`,
		`{server_id: "44010000002000000001", address: "h:1"}]}`,
		`{server_id: "44010000002000000001", address: "h:1", channels: [{id: "34020000001320000001"}]}]}`,
		`{server_id: "44010000002000000001", address: "h:1", channels: [{id: "34020000001320000001", stream: a}, {id: "34020000001320000001", stream: b}]}]}`,
		`{server_id: "44010000002000000001", address: "h:1", alarm_priority: 5, channels: [{id: "34020000001320000001", stream: a}]}]}`,
		`{server_id: "44010000002000000001", address: "h:1", expires: 1s, channels: [{id: "34020000001320000001", stream: a}]}]}`,
	} {
		if _, err := Parse([]byte(base + bad)); !errors.Is(err, ErrGB28181) || !strings.Contains(err.Error(), "upstream[0]") {
			t.Fatalf("%s: %v", bad, err)
		}
	}
}
