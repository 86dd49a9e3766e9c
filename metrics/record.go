package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// Recording metrics, read at scrape time when the watched app records streams
// (defs.RecordingStatser, docs/recording.md).
var (
	descRecSegments = desc("recording_segments_total", "Recorded segments closed.")
	descRecBytes    = desc("recording_written_bytes_total", "Bytes of recorded video written.")
	descRecDropped  = desc("recording_dropped_gops_total", "GOPs not recorded: buffer or writer queue full, or the write failed (disk full).")
	descRecRepaired = desc("recording_crash_segments_total", "Segments a crash cut, at start: repaired (cut back to whole fragments) or removed.", "outcome")
	descRecRetained = desc("recording_deleted_total", "Segments removed by retention (max_age, max bytes, min_free).")
	descResFrames   = desc("results_log_frames_total", "Frames appended to the per-frame results log.")
	descResBytes    = desc("results_log_written_bytes_total", "Bytes appended to the per-frame results log.")
	descResDropped  = desc("results_log_dropped_frames_total", "Frames of the results log lost to write failures (disk full).")
	descResTorn     = desc("results_log_torn_tails_total", "Torn results-log tails cut at start (a crash mid-append).")
	recordDescs     = []*prometheus.Desc{descRecSegments, descRecBytes, descRecDropped, descRecRepaired, descRecRetained,
		descResFrames, descResBytes, descResDropped, descResTorn}
)

// collectRecording emits the recording metrics of src, when it records.
func collectRecording(src any, ch chan<- prometheus.Metric) {
	rs, ok := src.(defs.RecordingStatser)
	if !ok {
		return
	}
	st, ok := rs.RecordingStats()
	if !ok {
		return
	}
	c := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	c(descRecSegments, st.Segments)
	c(descRecBytes, st.Bytes)
	c(descRecDropped, st.DroppedGOPs)
	c(descRecRepaired, st.Repaired, "repaired")
	c(descRecRepaired, st.RemovedTorn, "removed")
	c(descRecRetained, st.Retained)
	c(descResFrames, st.ResultFrames)
	c(descResBytes, st.ResultBytes)
	c(descResDropped, st.ResultsDropped)
	c(descResTorn, st.ResultsTorn)
}
