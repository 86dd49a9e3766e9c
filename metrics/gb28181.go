package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// GB28181 platform metrics, read at scrape time from the watched app when it runs a platform
// (defs.GB28181); none without a gb28181: section.
var (
	descGBEvents  = desc("gb28181_events_total", "GB28181 platform events and refusals, by kind: the counters of GET /api/gb28181/devices (registers, challenges, nonce_refused, wrong_source, unknown_call_id, tiny_datagrams, tcp_refused, tcp_timeouts, invites, cancels, ...; docs/gb28181.md).", "kind")
	descGBDevices = desc("gb28181_devices", "GB28181 devices known to the platform, by state: online or offline.", "state")
)

// gbCollector reads the watched app's GB28181 platform.
type gbCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (gbCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descGBEvents
	ch <- descGBDevices
}

// Collect implements prometheus.Collector.
func (c gbCollector) Collect(ch chan<- prometheus.Metric) {
	ref := c.m.watched.Load()
	if ref == nil {
		return
	}
	g, ok := ref.Source.(defs.GB28181)
	if !ok {
		return
	}
	info, ok := g.GB28181()
	if !ok {
		return
	}
	kinds := make([]string, 0, len(info.Counters))
	for k := range info.Counters {
		kinds = append(kinds, k)
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		ch <- prometheus.MustNewConstMetric(descGBEvents, prometheus.CounterValue, float64(info.Counters[k]), k)
	}
	online := 0
	for _, d := range info.Devices {
		if d.Online {
			online++
		}
	}
	ch <- prometheus.MustNewConstMetric(descGBDevices, prometheus.GaugeValue, float64(online), "online")
	ch <- prometheus.MustNewConstMetric(descGBDevices, prometheus.GaugeValue, float64(len(info.Devices)-online), "offline")
}
