package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/cluster"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/source/live"
)

// TestSummaryLive: the summary line of a live stream shows its health, loss, damaged access
// units, reconnects and outages; a file's shows none of them.
func TestSummaryLive(t *testing.T) {
	var b strings.Builder
	summary(&b, []defs.StreamInfo{
		{Decl: config.Stream{ID: "cam", Model: "m"}, Live: true, Elapsed: time.Second,
			Source: &live.Stats{State: live.StateRunning, Packets: 950, Lost: 50, Damaged: 7, Reconnects: 2, Outages: 1, OutageSeconds: 12}},
		{Decl: config.Stream{ID: "file", Model: "m"}, Ended: true, Elapsed: time.Second},
	}, time.Second)
	lines := strings.Split(b.String(), "\n")
	if !strings.Contains(lines[1], "running  packets 950 lost 50 (5.0%) damaged 7 reconnects 2 outages 1 (12s)") {
		t.Errorf("live line: %q", lines[1])
	}
	if strings.Contains(lines[2], "packets") {
		t.Errorf("file line: %q", lines[2])
	}
}

// TestSummaryHandedOver: a cluster node whose streams all went to other nodes lists them with
// why, and its header counts them, instead of "0 stream(s)".
func TestSummaryHandedOver(t *testing.T) {
	var b strings.Builder
	summary(&b, nil, 10*time.Second,
		cluster.Departed{Info: defs.StreamInfo{Decl: config.Stream{ID: "cam-01", Model: "m"}, Elapsed: 10 * time.Second,
			Counters: defs.StreamCounters{Decoded: 250, Inferred: 240}}, Why: cluster.WhyHandedOver},
		cluster.Departed{Info: defs.StreamInfo{Decl: config.Stream{ID: "cam-02", Model: "m"}}, Why: cluster.WhyFenced})
	out := b.String()
	for _, want := range []string{
		"summary: 2 stream(s) in 10.00s: 0 here at the end, 2 stopped for the cluster (1 fenced, 1 handed over)",
		"cam-01", "handed over decoded    250  inferred    240",
		"total: decoded 250 frames, inferred 240",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
