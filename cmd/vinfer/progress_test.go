package main

import (
	"strings"
	"testing"
	"time"

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
