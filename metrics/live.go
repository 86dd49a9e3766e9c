package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// Live view metrics, read at scrape time (defs.LiveStatser; docs/live-view.md).
var (
	descLiveViewers  = desc("live_viewers", "Live video viewers now (WebRTC and fragmented MP4), over every stream.")
	descLiveSessions = desc("live_sessions_total", "Live video viewers that joined.")
	descLiveSlow     = desc("live_viewers_dropped_total", "Live video viewers dropped because their queue of access units was full (too slow).")
	descLiveRefused  = desc("live_viewers_refused_total", "Live video viewers refused at a stream's max_viewers (503).")
)

var liveDescs = []*prometheus.Desc{descLiveViewers, descLiveSessions, descLiveSlow, descLiveRefused}

// collectLive emits the live view's metrics of src, when it has a live view.
func collectLive(src any, ch chan<- prometheus.Metric) {
	ls, ok := src.(defs.LiveStatser)
	if !ok {
		return
	}
	st := ls.LiveStats()
	ch <- prometheus.MustNewConstMetric(descLiveViewers, prometheus.GaugeValue, float64(st.Viewers))
	ch <- prometheus.MustNewConstMetric(descLiveSessions, prometheus.CounterValue, float64(st.Sessions))
	ch <- prometheus.MustNewConstMetric(descLiveSlow, prometheus.CounterValue, float64(st.Slow))
	ch <- prometheus.MustNewConstMetric(descLiveRefused, prometheus.CounterValue, float64(st.Refused))
}
