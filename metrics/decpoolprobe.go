package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// How the shared decoders probe idle key frames (docs/activity.md "Decoders of idle streams").
var (
	descPoolDrains = desc("decoder_pool_probe_drains_total", "Idle key-frame probes that drained the shared decoder to the end of stream and reset it (H.265, H.264 key frames without IDR).")
	descPoolPushes = desc("decoder_pool_probe_pushes_total", "Idle key-frame probes whose picture an H.264 end of sequence pushed out of the shared decoder.")
	descPoolSetups = desc("decoder_pool_probe_setups_total", "Decoder set-ups during idle key-frame probes (NVDEC: a CUVID decoder and its surfaces made anew).")
)

func init() { activityDescs = append(activityDescs, descPoolDrains, descPoolPushes, descPoolSetups) }

// collectPoolProbes emits the shared pools' probe figures.
func collectPoolProbes(s defs.DecoderPoolStats, ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descPoolDrains, prometheus.CounterValue, float64(s.ProbeDrains))
	ch <- prometheus.MustNewConstMetric(descPoolPushes, prometheus.CounterValue, float64(s.ProbePushes))
	ch <- prometheus.MustNewConstMetric(descPoolSetups, prometheus.CounterValue, float64(s.ProbeSetups))
}
