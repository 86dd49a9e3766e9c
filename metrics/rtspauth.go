package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// descRTSPAuthFailures counts requests the RTSP servers refused for their credentials, read
// at scrape time (defs.RTSPAuth); reason is one of a fixed few.
var descRTSPAuthFailures = desc("rtsp_auth_failures_total",
	"RTSP requests refused for their credentials, by reason: missing (none given: every client's first request counts once), wrong (Basic/Digest of no user), method (a scheme not offered).", "reason")

// rtspAuthCollector reads the watched app's RTSP credential checks.
type rtspAuthCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (rtspAuthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- descRTSPAuthFailures }

// Collect implements prometheus.Collector.
func (c rtspAuthCollector) Collect(ch chan<- prometheus.Metric) {
	ref := c.m.watched.Load()
	if ref == nil {
		return
	}
	r, ok := ref.Source.(defs.RTSPAuth)
	if !ok {
		return
	}
	fails, ok := r.RTSPAuthFailures()
	if !ok {
		return
	}
	for reason, n := range fails {
		ch <- prometheus.MustNewConstMetric(descRTSPAuthFailures, prometheus.CounterValue, float64(n), reason)
	}
}
