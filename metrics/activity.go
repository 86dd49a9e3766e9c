package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// Activity metrics of gated streams (docs/activity.md).
var (
	descGated      = desc("frames_gated_total", "Frames not inferred because nothing moved (decoded and skipped, or never decoded while idle).", "stream")
	descMotion     = desc("motion_fraction", "Moving share of the stream's last frame checked for motion (0-1).", "stream")
	descActState   = desc("activity_state", "1 for the stream's activity state (full, gated, idle), 0 for the others.", "stream", "state")
	descWakes      = desc("stream_wakes_total", "Idle streams woken by activity or a wake call.", "stream")
	descProbes     = desc("stream_key_frame_probes_total", "Key frames decoded while idle.", "stream")
	descBurstUnits = desc("stream_burst_access_units_total", "Held access units decoded in wake bursts.", "stream")
	descBurstCut   = desc("stream_burst_cut_total", "Access units a full GOP buffer refused (lost to a wake's burst).", "stream")
	activityDescs  = []*prometheus.Desc{descGated, descMotion, descActState, descWakes, descProbes, descBurstUnits, descBurstCut}
	activityStates = []defs.ActivityState{defs.ActivityFull, defs.ActivityGated, defs.ActivityIdle}
)

// collectActivity emits a gated stream's activity metrics.
func collectActivity(id string, a *defs.Activity, ch chan<- prometheus.Metric) {
	if a == nil {
		return
	}
	c := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c(descGated, float64(a.Gated), id)
	g(descMotion, a.Fraction, id)
	for _, s := range activityStates {
		v := 0.0
		if a.State == s {
			v = 1
		}
		g(descActState, v, id, s.String())
	}
	c(descWakes, float64(a.Wakes), id)
	c(descProbes, float64(a.Probes), id)
	c(descBurstUnits, float64(a.BurstUnits), id)
	c(descBurstCut, float64(a.Cut), id)
	collectIdle(id, a, ch)
}
