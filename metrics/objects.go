package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// descObjectsDropped counts the detections a stream's object rules removed (docs/models.md).
var descObjectsDropped = desc("objects_dropped_total", "Detections removed by the stream's object rules, by reason: masked, filtered, merged (NMS inside a class group).", "stream", "reason")

// collectObjects emits a stream's object-rule counters.
func collectObjects(id string, c *defs.StreamCounters, ch chan<- prometheus.Metric) {
	for _, r := range []struct {
		reason string
		n      int64
	}{{"masked", c.Masked}, {"filtered", c.Filtered}, {"merged", c.Merged}} {
		ch <- prometheus.MustNewConstMetric(descObjectsDropped, prometheus.CounterValue, float64(r.n), id, r.reason)
	}
}
