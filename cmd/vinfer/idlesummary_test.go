package main

import (
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
)

// TestIdleSummary: the run summary reports gated streams by state, those idle without a
// decoder, the wake latency and the host memory per idle stream, and the shared decoders.
func TestIdleSummary(t *testing.T) {
	streams := []defs.StreamInfo{
		{Activity: &defs.Activity{State: defs.ActivityIdle, Parked: true, HeldBytes: 2048, Wakes: 1, WokeResults: 1, WakeNanos: int64(300 * time.Millisecond), WakeMaxNanos: int64(300 * time.Millisecond)}},
		{Activity: &defs.Activity{State: defs.ActivityIdle, Parked: true, HeldBytes: 4096}},
		{Activity: &defs.Activity{State: defs.ActivityFull, Wakes: 2, WokeResults: 1, WakeNanos: int64(100 * time.Millisecond), WakeMaxNanos: int64(100 * time.Millisecond)}},
		{},
	}
	var b strings.Builder
	idleSummary(&b, streams, defs.DecoderPoolStats{Created: 5, Probers: 2, Warm: 1, Taken: 1, Probes: 40, ProbeNanos: int64(80 * time.Millisecond), ProbeDrains: 3, ProbeSetups: 4, Handouts: 2, Cold: 1})
	out := b.String()
	for _, want := range []string{"3 gated stream(s): full 1, gated 0, idle 2 (2 without a decoder); wakes 3",
		"wake → first result mean 200.0 ms max 300.0 ms (2)", "host memory per idle stream 3.0 KiB",
		"shared decoders: 5 made, 2 probe + 1 warm + 1 held by streams at the end; 40 idle key frames (2.00 ms each, 0 refused busy, 3 drained, 4 set-ups); wakes handed 2 warm, 1 cold"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	idleSummary(&b, streams[3:], defs.DecoderPoolStats{})
	if b.Len() != 0 {
		t.Errorf("no gated stream: %q", b.String())
	}
}
