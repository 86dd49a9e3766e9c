package metrics_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/source/live"
)

// liveStreams is a running system with a stalled live stream, a file that ended, one that
// failed and one starting.
type liveStreams struct{ twoGPUs }

func (liveStreams) Streams() []defs.StreamInfo {
	cam := defs.StreamInfo{Decl: config.Stream{ID: "cam", Model: "m"}, Device: -1, Live: true,
		Counters: defs.StreamCounters{AccessUnits: 5},
		Source: &live.Stats{State: live.StateStalled, Reconnects: 2, Damaged: 3, Watchdog: 1, Foreign: 4,
			TimestampOutliers: 1, Outages: 1, OutageSeconds: 12.5}}
	return []defs.StreamInfo{cam,
		{Decl: config.Stream{ID: "file", Model: "m"}, Device: -1, Ended: true, Counters: defs.StreamCounters{AccessUnits: 5}},
		{Decl: config.Stream{ID: "bad", Model: "m"}, Device: -1, Err: errors.New("x")},
		{Decl: config.Stream{ID: "new", Model: "m"}, Device: -1, Started: time.Now()},
	}
}

// TestStreamStateAndSourceEvents: vinfer_stream_state is a state set per stream (live health,
// or a file's course), and every live source counter is exported.
func TestStreamStateAndSourceEvents(t *testing.T) {
	body := scrape(t, liveStreams{})
	for _, want := range []string{
		`vinfer_stream_state{state="stalled",stream="cam"} 1`,
		`vinfer_stream_state{state="running",stream="cam"} 0`,
		`vinfer_stream_state{state="ended",stream="file"} 1`,
		`vinfer_stream_state{state="failed",stream="bad"} 1`,
		`vinfer_stream_state{state="connecting",stream="new"} 1`,
		`vinfer_source_events_total{event="damaged",stream="cam"} 3`,
		`vinfer_source_events_total{event="watchdog",stream="cam"} 1`,
		`vinfer_source_events_total{event="foreign",stream="cam"} 4`,
		`vinfer_source_events_total{event="timestamp_outlier",stream="cam"} 1`,
		`vinfer_source_events_total{event="outage",stream="cam"} 1`,
		`vinfer_source_outage_seconds_total{stream="cam"} 12.5`,
		`vinfer_source_reconnects_total{stream="cam"} 2`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
	if strings.Contains(body, `vinfer_source_events_total{event="damaged",stream="file"}`) {
		t.Error("a file has source events")
	}
}
