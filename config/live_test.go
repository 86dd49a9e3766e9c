package config

import (
	"errors"
	"strings"
	"testing"
)

// TestLive: the live: section's defaults, and settings that cannot work refused with what to fix.
func TestLive(t *testing.T) {
	const base = "models: [{name: m, path: m.onnx}]\nstreams: [{id: a, source: a.mp4, model: m}]\n"
	c, err := Parse([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if c.Live.MaxViewers != DefaultMaxViewers || c.Live.Queue != DefaultLiveQueue {
		t.Fatalf("defaults: %+v", c.Live)
	}
	c, err = Parse([]byte(base + "live: {max_viewers: 2, ice: {public_ips: [203.0.113.7], port_min: 50000, port_max: 50100, servers: [{urls: ['stun:stun.example.com:3478']}]}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Live.MaxViewers != 2 || c.Live.ICE.PortMax != 50100 || c.Live.ICE.PublicIPs[0] != "203.0.113.7" {
		t.Fatalf("parsed: %+v", c.Live)
	}
	for _, bad := range []struct{ yaml, says string }{
		{"live: {max_viewers: -1}", "negative"},
		{"live: {ice: {port_min: 50000}}", "go together"},
		{"live: {ice: {port_min: 50100, port_max: 50000}}", "min ≤ max"},
		{"live: {ice: {public_ips: [example.com]}}", "not an IP address"},
		{"live: {ice: {servers: [{urls: ['turn:turn.example.com']}]}}", "needs username and credential"},
		{"live: {ice: {servers: [{urls: ['http://x']}]}}", "not a stun:"},
		{"live: {ice: {servers: [{}]}}", "no urls"},
	} {
		_, err := Parse([]byte(base + bad.yaml + "\n"))
		if !errors.Is(err, ErrLive) && (err == nil || !strings.Contains(err.Error(), bad.says)) {
			t.Errorf("%s: %v, want an error saying %q", bad.yaml, err, bad.says)
			continue
		}
		if !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%s: %v, want it to say %q", bad.yaml, err, bad.says)
		}
	}
}
