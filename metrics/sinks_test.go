package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/metrics"
)

// sinkSource is a watched system with one delivering sink and nothing else.
type sinkSource struct{}

func (sinkSource) Streams() []defs.StreamInfo            { return nil }
func (sinkSource) Stream(string) (defs.StreamInfo, bool) { return defs.StreamInfo{}, false }
func (sinkSource) Models() []defs.ModelInfo              { return nil }
func (sinkSource) Model(string) (defs.ModelInfo, bool)   { return defs.ModelInfo{}, false }
func (sinkSource) ReloadModel(string) error              { return nil }
func (sinkSource) GPUs() []defs.GPUInfo                  { return nil }
func (sinkSource) Sinks() []defs.SinkInfo {
	return []defs.SinkInfo{{Name: "mqtt", Type: "mqtt", Up: false, Delivered: 7, Retried: 3, Failed: 2,
		Dropped: map[string]uint64{"full": 4, "age": 0}, Depth: 5, DepthBytes: 900, OldestAge: 1500 * time.Millisecond,
		DiskFullSince: time.Unix(1, 0)}}
}

func TestSinkSeries(t *testing.T) {
	m := metrics.New()
	done := make(chan struct{})
	defer close(done)
	m.Watch(sinkSource{}, done)
	want := `
# HELP vinfer_sink_delivered_total Records (events, detections) the sink's broker acknowledged.
# TYPE vinfer_sink_delivered_total counter
vinfer_sink_delivered_total{sink="mqtt"} 7
# HELP vinfer_sink_dropped_total Records the sink's outbox dropped before delivery, by reason: full, age, rejected, corrupt, disk_full.
# TYPE vinfer_sink_dropped_total counter
vinfer_sink_dropped_total{reason="age",sink="mqtt"} 0
vinfer_sink_dropped_total{reason="full",sink="mqtt"} 4
# HELP vinfer_sink_oldest_age_seconds Age of the oldest undelivered record in the sink's outbox (0 when none).
# TYPE vinfer_sink_oldest_age_seconds gauge
vinfer_sink_oldest_age_seconds{sink="mqtt"} 1.5
# HELP vinfer_sink_outbox_disk_full 1 while the sink's outbox finds its file system full (new records dropped, reason disk_full), else 0.
# TYPE vinfer_sink_outbox_disk_full gauge
vinfer_sink_outbox_disk_full{sink="mqtt"} 1
# HELP vinfer_sink_outbox_depth Undelivered records in the sink's outbox.
# TYPE vinfer_sink_outbox_depth gauge
vinfer_sink_outbox_depth{sink="mqtt"} 5
# HELP vinfer_sink_up 1 while the sink's deliveries succeed, 0 from a failed attempt until the next success.
# TYPE vinfer_sink_up gauge
vinfer_sink_up{sink="mqtt"} 0
`
	err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "vinfer_sink_delivered_total",
		"vinfer_sink_dropped_total", "vinfer_sink_oldest_age_seconds", "vinfer_sink_outbox_depth", "vinfer_sink_outbox_disk_full", "vinfer_sink_up")
	if err != nil {
		t.Fatal(err)
	}
}
