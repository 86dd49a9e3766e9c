package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// descCameraEvents is the ONVIF camera events of onvif:// streams with activity gating, read
// at scrape time from the watched app (defs.CameraEvents).
var descCameraEvents = desc("onvif_events_total", "ONVIF camera events of onvif:// streams with activity gating, by kind: received (messages pulled), wakes (pulls that woke the stream), failures (lost or refused subscriptions, made again; docs/onvif.md).", "stream", "kind")

// onvifCollector reads the watched app's camera event counters.
type onvifCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (onvifCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descCameraEvents }

// Collect implements prometheus.Collector.
func (c onvifCollector) Collect(ch chan<- prometheus.Metric) {
	ref := c.m.watched.Load()
	if ref == nil {
		return
	}
	e, ok := ref.Source.(defs.CameraEvents)
	if !ok {
		return
	}
	for _, s := range e.CameraEvents() {
		ch <- prometheus.MustNewConstMetric(descCameraEvents, prometheus.CounterValue, float64(s.Received), s.Stream, "received")
		ch <- prometheus.MustNewConstMetric(descCameraEvents, prometheus.CounterValue, float64(s.Wakes), s.Stream, "wakes")
		ch <- prometheus.MustNewConstMetric(descCameraEvents, prometheus.CounterValue, float64(s.Failures), s.Stream, "failures")
	}
}
