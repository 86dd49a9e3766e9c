package config

import (
	"errors"
	"testing"
)

func TestGB28181Section(t *testing.T) {
	c, err := Parse([]byte(`
gb28181:
  id: "34020000002000000001"
  password: secret
  devices: [{id: "34020000001320000001", password: own}]
  media_ports: 31000-31010
  keepalive_timeout: 30s
`))
	if err != nil {
		t.Fatal(err)
	}
	g := c.GB28181
	if g.Domain != "3402000000" || g.Listen != DefaultGBListen || *g.AllowUnknown || g.MaxDevices != DefaultGBMaxDevices {
		t.Fatalf("%+v", g)
	}
	if p, ok := g.DevicePassword("34020000001320000001"); p != "own" || !ok {
		t.Fatal(p, ok)
	}
	if _, ok := g.DevicePassword("34020000001320000002"); ok {
		t.Fatal("unlisted device allowed")
	}
	for _, bad := range []string{
		`gb28181: {id: "123"}`,
		`gb28181: {id: "34020000002000000001", domain: "34"}`,
		`gb28181: {id: "34020000002000000001", media_ports: "9-1"}`,
		`gb28181: {id: "34020000002000000001", media_ip: "camera.local"}`,
		`gb28181: {id: "34020000002000000001", devices: [{id: "1"}]}`,
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrGB28181) {
			t.Fatalf("%s: %v", bad, err)
		}
	}
}
