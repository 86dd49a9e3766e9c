package main

import (
	"fmt"
	"io"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
)

// idleSummary writes the run summary's activity lines when streams are gated: streams by
// state, those idle without a decoder, wakes and the time from a wake's start to its first
// result, the host memory the gates hold per idle stream, and the shared decoder pools
// (docs/activity.md).
func idleSummary(w io.Writer, streams []defs.StreamInfo, pools defs.DecoderPoolStats) {
	states := map[defs.ActivityState]int{}
	gated, parked, idle := 0, 0, 0
	var wakes, woke, wakeNanos, wakeMax, burst, unsampled int64
	heldIdle := 0
	for i := range streams {
		a := streams[i].Activity
		if a == nil {
			continue
		}
		gated++
		states[a.State]++
		if a.State == defs.ActivityIdle {
			idle++
			heldIdle += a.HeldBytes
		}
		if a.Parked {
			parked++
		}
		wakes += a.Wakes
		woke += a.WokeResults
		wakeNanos += a.WakeNanos
		wakeMax = max(wakeMax, a.WakeMaxNanos)
		burst += a.BurstUnits
		unsampled += a.Unsampled
	}
	if gated == 0 {
		return
	}
	fmt.Fprintf(w, "  activity: %d gated stream(s): full %d, gated %d, idle %d (%d without a decoder); wakes %d, burst units %d",
		gated, states[defs.ActivityFull], states[defs.ActivityGated], idle, parked, wakes, burst)
	if woke > 0 {
		fmt.Fprintf(w, ", wake → first result mean %.1f ms max %.1f ms (%d)", float64(wakeNanos)/float64(woke)/1e6, float64(wakeMax)/1e6, woke)
	}
	if idle > 0 {
		fmt.Fprintf(w, ", host memory per idle stream %.1f KiB", float64(heldIdle)/float64(idle)/1024)
	}
	if unsampled > 0 {
		fmt.Fprintf(w, ", unsampled frames %d", unsampled)
	}
	fmt.Fprintln(w)
	if pools.Created > 0 {
		probe := time.Duration(0)
		if pools.Probes > 0 {
			probe = time.Duration(pools.ProbeNanos / pools.Probes)
		}
		fmt.Fprintf(w, "  shared decoders: %d made, %d probe + %d warm + %d held by streams at the end; %d idle key frames (%.2f ms each, %d refused busy, %d drained, %d set-ups); wakes handed %d warm, %d cold\n",
			pools.Created, pools.Probers, pools.Warm, pools.Taken, pools.Probes, float64(probe)/1e6, pools.Busy, pools.ProbeDrains, pools.ProbeSetups, pools.Handouts, pools.Cold)
	}
}
