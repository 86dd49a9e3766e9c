package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// output.rtsp metrics, read at scrape time (defs.RTSPMeta); none without output.rtsp.
var (
	descRTSPMetaClients = desc("rtsp_clients", "RTSP sessions open on output.rtsp (video with ONVIF metadata).")
	descRTSPMetaEvents  = desc("rtsp_events_total", "output.rtsp events by kind: dropped (a client not reading), refused (beyond max_clients), documents (metadata documents sent).", "kind")
)

// rtspMetaCollector reads the watched app's RTSP metadata server.
type rtspMetaCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (rtspMetaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRTSPMetaClients
	ch <- descRTSPMetaEvents
}

// Collect implements prometheus.Collector.
func (c rtspMetaCollector) Collect(ch chan<- prometheus.Metric) {
	ref := c.m.watched.Load()
	if ref == nil {
		return
	}
	r, ok := ref.Source.(defs.RTSPMeta)
	if !ok {
		return
	}
	info, ok := r.RTSPMeta()
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(descRTSPMetaClients, prometheus.GaugeValue, float64(info.Clients))
	ch <- prometheus.MustNewConstMetric(descRTSPMetaEvents, prometheus.CounterValue, float64(info.Dropped), "dropped")
	ch <- prometheus.MustNewConstMetric(descRTSPMetaEvents, prometheus.CounterValue, float64(info.Refused), "refused")
	ch <- prometheus.MustNewConstMetric(descRTSPMetaEvents, prometheus.CounterValue, float64(info.Documents), "documents")
}
