package metrics

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// GB28181 upward cascade metrics, read at scrape time (defs.GB28181Upstreams); none without
// gb28181.upstream entries.
var (
	descGBUpRegistered = desc("gb28181_upstream_registered", "1 while the upper platform accepts vinfer's registration, else 0 (a refused password stays 0; see gb28181_upstream_events_total{kind=\"refused\"}).", "server_id")
	descGBUpEvents     = desc("gb28181_upstream_events_total", "GB28181 upward cascade events by upper platform and kind: registrations, refused, register_errors, keepalives, keepalive_failures, queries, forbidden, invites, byes, alarms_sent, alarms_dropped, alarms_filtered, subscriptions, media_dropped, playbacks, playbacks_ended (docs/gb28181.md).", "server_id", "kind")
)

// gbUpCollector reads the watched app's upstreams.
type gbUpCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (gbUpCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descGBUpRegistered
	ch <- descGBUpEvents
}

// Collect implements prometheus.Collector.
func (c gbUpCollector) Collect(ch chan<- prometheus.Metric) {
	ref := c.m.watched.Load()
	if ref == nil {
		return
	}
	g, ok := ref.Source.(defs.GB28181Upstreams)
	if !ok {
		return
	}
	for _, u := range g.GB28181Upstreams() {
		reg := 0.0
		if u.Registered {
			reg = 1
		}
		ch <- prometheus.MustNewConstMetric(descGBUpRegistered, prometheus.GaugeValue, reg, u.ServerID)
		kinds := make([]string, 0, len(u.Counters))
		for k := range u.Counters {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		for _, k := range kinds {
			ch <- prometheus.MustNewConstMetric(descGBUpEvents, prometheus.CounterValue, float64(u.Counters[k]), u.ServerID, k)
		}
	}
}
