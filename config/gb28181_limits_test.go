package config

import (
	"errors"
	"testing"
	"time"
)

// TestGB28181Limits: the signalling limits' defaults, values read, negatives refused.
func TestGB28181Limits(t *testing.T) {
	c, err := Parse([]byte(`gb28181: {id: "34020000002000000001"}`))
	if err != nil {
		t.Fatal(err)
	}
	g := c.GB28181
	if time.Duration(g.NonceTTL) != DefaultGBNonceTTL || time.Duration(g.TCPIdleTimeout) != DefaultGBTCPIdleTimeout ||
		time.Duration(g.TCPMessageTimeout) != DefaultGBTCPMsgTimeout || g.MaxTCPConns != DefaultGBMaxTCPConns ||
		g.MaxTCPConnsPerHost != DefaultGBMaxTCPPerHost || g.MessageAuth {
		t.Fatalf("defaults: %+v", g)
	}
	c, err = Parse([]byte(`gb28181: {id: "34020000002000000001", nonce_ttl: 10s, tcp_idle_timeout: 5m, tcp_message_timeout: 3s,
  max_tcp_conns: 100, max_tcp_conns_per_host: 4, message_auth: true}`))
	if err != nil {
		t.Fatal(err)
	}
	g = c.GB28181
	if time.Duration(g.NonceTTL) != 10*time.Second || time.Duration(g.TCPIdleTimeout) != 5*time.Minute ||
		time.Duration(g.TCPMessageTimeout) != 3*time.Second || g.MaxTCPConns != 100 || g.MaxTCPConnsPerHost != 4 || !g.MessageAuth {
		t.Fatalf("values: %+v", g)
	}
	for _, bad := range []string{
		`gb28181: {id: "34020000002000000001", nonce_ttl: -1s}`,
		`gb28181: {id: "34020000002000000001", max_tcp_conns: -1}`,
		`gb28181: {id: "34020000002000000001", max_tcp_conns_per_host: -2}`,
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrGB28181) {
			t.Fatalf("%s: %v", bad, err)
		}
	}
}
