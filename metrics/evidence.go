package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
)

// Evidence metrics, read at scrape time when the watched app records evidence
// (defs.EvidenceStatser).
var (
	descEvBufBytes  = desc("evidence_buffer_bytes", "Coded video buffered for clips, by stream.", "stream")
	descEvBufUnits  = desc("evidence_buffer_access_units", "Access units buffered for clips, by stream.", "stream")
	descEvBufCap    = desc("evidence_buffer_capacity_bytes", "Size of the stream's clip buffer (grows up to evidence.buffer).", "stream")
	descEvBufSpan   = desc("evidence_buffer_seconds", "PTS span of the stream's clip buffer.", "stream")
	descEvOverrun   = desc("evidence_buffer_overruns_total", "GOPs dropped from a full buffer while a clip still needed them.", "stream")
	descEvStored    = desc("evidence_stored_bytes", "Bytes of clips and snapshots on disk, by stream.", "stream")
	descEvClipsNow  = desc("evidence_stored_clips", "Clips on disk, by stream.", "stream")
	descEvRecorded  = desc("evidence_events_total", "Events indexed.")
	descEvClips     = desc("evidence_clips_written_total", "Clips written.")
	descEvSnaps     = desc("evidence_snapshots_written_total", "Event snapshots written.")
	descEvClipBytes = desc("evidence_written_bytes_total", "Bytes of clips and snapshots written.")
	descEvFailures  = desc("evidence_failures_total", "Clips or snapshots not written, by reason (queue_full, no_keyframe, too_large, disk_full, write, index, snapshot).", "reason")
	descEvDeleted   = desc("evidence_deleted_total", "Clips deleted, by reason (max_age, max_bytes_per_stream, max_bytes, min_free, missing, orphan).", "reason")
)

var evidenceDescs = []*prometheus.Desc{descEvBufBytes, descEvBufUnits, descEvBufCap, descEvBufSpan, descEvOverrun,
	descEvStored, descEvClipsNow, descEvRecorded, descEvClips, descEvSnaps, descEvClipBytes, descEvFailures, descEvDeleted}

// collectEvidence emits the evidence metrics of src, when it records evidence.
func collectEvidence(src any, ch chan<- prometheus.Metric) {
	es, ok := src.(defs.EvidenceStatser)
	if !ok {
		return
	}
	st, ok := es.EvidenceStats()
	if !ok {
		return
	}
	c := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	for _, s := range st.Streams {
		g(descEvBufBytes, float64(s.BufferBytes), s.Stream)
		g(descEvBufUnits, float64(s.BufferUnits), s.Stream)
		g(descEvBufCap, float64(s.BufferCapacity), s.Stream)
		g(descEvBufSpan, s.BufferSpan.Seconds(), s.Stream)
		c(descEvOverrun, float64(s.BufferOverruns), s.Stream)
		g(descEvStored, float64(s.StoredBytes), s.Stream)
		g(descEvClipsNow, float64(s.StoredClips), s.Stream)
	}
	c(descEvRecorded, float64(st.Recorded))
	c(descEvClips, float64(st.Clips))
	c(descEvSnaps, float64(st.Snapshots))
	c(descEvClipBytes, float64(st.ClipBytes))
	for r, n := range st.Failures {
		c(descEvFailures, float64(n), r)
	}
	for r, n := range st.Deleted {
		c(descEvDeleted, float64(n), r)
	}
}
