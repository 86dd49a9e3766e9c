package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// Decoders shared by idle streams (docs/activity.md "Decoders of idle streams") and the
// per-stream figures of idle decoding.
var (
	descPoolDecoders = desc("decoder_pool_decoders", "Decoders of the shared pools of idle streams, by role: probe (decode idle key frames), warm (ready for a wake), taken (held by streams).", "role")
	descPoolProbes   = desc("decoder_pool_probes_total", "Idle key frames decoded on shared decoders.")
	descPoolBusy     = desc("decoder_pool_busy_total", "Idle key frames not decoded: every shared decoder stayed busy.")
	descPoolHand     = desc("decoder_pool_handouts_total", "Decoders handed to waking streams, warm or made on the spot (cold).", "kind")
	descPoolCreated  = desc("decoder_pool_created_total", "Decoders the shared pools made.")
	descParked       = desc("stream_decoder_parked", "1 while an idle stream holds no decoder of its own.", "stream")
	descWakeSec      = desc("stream_wake_result_seconds_total", "Time from each wake's start (the access unit that woke the stream arriving) to its first result, summed.", "stream")
	descWakeN        = desc("stream_wake_results_total", "Wakes whose first result came out.", "stream")
	descHeld         = desc("stream_activity_held_bytes", "Host memory the stream's activity gate holds (GOP buffer, sampled luma rows).", "stream")
	descUnsampled    = desc("stream_motion_unsampled_total", "Frames in GPU memory whose motion could not be checked (inferred).", "stream")
	decpoolDescs     = []*prometheus.Desc{descPoolDecoders, descPoolProbes, descPoolBusy, descPoolHand, descPoolCreated,
		descParked, descWakeSec, descWakeN, descHeld, descUnsampled}
)

// The pool's and idle streams' series are described with the activity ones.
func init() { activityDescs = append(activityDescs, decpoolDescs...) }

// collectIdle emits a gated stream's idle-decoding figures.
func collectIdle(id string, a *defs.Activity, ch chan<- prometheus.Metric) {
	if a == nil {
		return
	}
	parked := 0.0
	if a.Parked {
		parked = 1
	}
	ch <- prometheus.MustNewConstMetric(descParked, prometheus.GaugeValue, parked, id)
	ch <- prometheus.MustNewConstMetric(descWakeSec, prometheus.CounterValue, float64(a.WakeNanos)/1e9, id)
	ch <- prometheus.MustNewConstMetric(descWakeN, prometheus.CounterValue, float64(a.WokeResults), id)
	ch <- prometheus.MustNewConstMetric(descHeld, prometheus.GaugeValue, float64(a.HeldBytes), id)
	ch <- prometheus.MustNewConstMetric(descUnsampled, prometheus.CounterValue, float64(a.Unsampled), id)
}

// collectDecoderPools emits the shared pools' figures when the watched app has pools.
func collectDecoderPools(src any, ch chan<- prometheus.Metric) {
	dp, ok := src.(defs.DecoderPools)
	if !ok {
		return
	}
	s := dp.DecoderPools()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	c := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	g(descPoolDecoders, float64(s.Probers), "probe")
	g(descPoolDecoders, float64(s.Warm), "warm")
	g(descPoolDecoders, float64(s.Taken), "taken")
	c(descPoolProbes, float64(s.Probes))
	c(descPoolBusy, float64(s.Busy))
	c(descPoolHand, float64(s.Handouts), "warm")
	c(descPoolHand, float64(s.Cold), "cold")
	c(descPoolCreated, float64(s.Created))
	collectPoolProbes(s, ch) // decpoolprobe.go
}
