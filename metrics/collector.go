package metrics

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/source/live"
)

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
}

// Scrape-time metrics, read from the watched app.
var (
	descStreamsActive = desc("streams_active", "Streams running (added and not ended).")
	descStreams       = desc("streams", "Streams by state, as GET /api/streams reports them: starting, running, degraded (inference drops over sources.degraded), ended, failed (stopped by an error, or a source that cannot be opened, retried).", "state")
	descStartAttempts = desc("stream_start_attempts", "Failed attempts to open the source of a stream that could not start (retried with backoff, sources.retry).", "stream")
	descStreamInfo    = desc("stream_info", "One series per stream, value 1, naming its model, whether its source is live and the device its frames are decoded and inferred on (cpu or cuda:N).", "stream", "model", "live", "device")
	descAccessUnits   = desc("access_units_total", "Access units read from the stream's source.", "stream")
	descDecoded       = desc("frames_decoded_total", "Frames decoded.", "stream")
	descInferred      = desc("frames_inferred_total", "Frames inferred.", "stream")
	descDropped       = desc("frames_dropped_total", "Frames that did not reach a result, by reason: queue_full, interval, fps_cap, decode_error, infer_error.", "stream", "reason")
	descDetections    = desc("detections_total", "Detections reported, by class label.", "stream", "label")
	descQueue         = desc("queue_depth_frames", "Preprocessed frames waiting for inference.", "stream")
	descPool          = desc("frame_pool_frames", "Decoded frames of the stream's decoder pool, by state (in_use: held by the pipeline; free: allocated and ready).", "stream", "state")
	descPoolCap       = desc("frame_pool_capacity_frames", "Most frames the stream's decoder pool may hold.", "stream")
	descReconnects    = desc("source_reconnects_total", "Sessions re-established after the first (RTSP, TCP).", "stream")
	descConnFail      = desc("source_connect_failures_total", "Connection attempts that failed.", "stream")
	descRTPPackets    = desc("rtp_packets_total", "RTP packets accepted.", "stream")
	descRTPLost       = desc("rtp_packets_lost_total", "RTP sequence numbers that never arrived (RFC 3550 §A.3).", "stream")
	descSourceDropped = desc("source_access_units_dropped_total", "Access units discarded inside the source (damaged by loss, waiting for a key frame, reader too slow).", "stream")
	descStreamState   = desc("stream_state", "1 for the stream's current state, 0 for the others: connecting, waiting_keyframe, running, stalled, failed (live sources' health, docs/live.md), degraded (inference drops over sources.degraded), ended (a file finished).", "stream", "state")
	descSourceEvents  = desc("source_events_total", "What a live source counted, by event: reordered, duplicate, late, garbage (datagrams not RTP), foreign (packets of another SSRC or sender), ssrc_change, sender_change, damaged (access units delivered with lost packets), discontinuity, watchdog (sessions or sender locks ended by silence), outage, timestamp_outlier, timestamp_jump, decode_error (payloads that do not parse).", "stream", "event")
	descOutageSec     = desc("source_outage_seconds_total", "Time live sources spent in outages (silences of the watchdog period or longer).", "stream")
	descModelLoaded   = desc("model_loaded", "1 when the model is loaded, 0 when only declared.", "model")
	descModelLoadSec  = desc("model_load_seconds", "Time the serving version of the model took to load (session creation).", "model")
	descModelLoads    = desc("model_loads_total", "Successful loads of the model (first load and reloads).", "model")
	descBatches       = desc("inference_batches_total", "Inference runs.", "model")
	descBatchFrames   = desc("inference_batch_frames_total", "Frames in inference runs (divide by inference_batches_total for the mean batch).", "model")
	descThroughput    = desc("pipeline_throughput_frames_per_second", "Frames inferred per second over the last window, all streams of the model.", "model")
	descCapacity      = desc("stage_capacity_frames_per_second", "Frames per second a stage could sustain at its measured busy time per frame: inference (the model's worker) or decode_preprocess (the streams' goroutines together).", "model", "stage")
	descEfficiency    = desc("pipeline_efficiency_ratio", "Achieved fps divided by the bottleneck stage's fps over the last window (1: as fast as the slowest stage allows).", "model")
	descZoneObjects   = desc("zone_objects", "Tracked objects in a zone now, by class.", "stream", "zone", "class")
	descZoneEvents    = desc("zone_events_total", "Zone events (enter, leave, loiter), by class.", "stream", "zone", "type", "class")
	descLineCross     = desc("line_crossings_total", "Tracks that crossed a line, by direction (in, out) and class.", "stream", "line", "direction", "class")
	descGPUUsed       = desc("gpu_memory_used_bytes", "GPU memory in use on the device (all processes), for every GPU vinfer uses.", "device")
	descGPUTotal      = desc("gpu_memory_total_bytes", "GPU memory of the device, for every GPU vinfer uses.", "device")
	descSinkDelivered = desc("sink_delivered_total", "Records (events, detections) the sink's broker acknowledged.", "sink")
	descSinkRetried   = desc("sink_retried_total", "Records sent again after a failed delivery attempt.", "sink")
	descSinkFailed    = desc("sink_failed_total", "Delivery attempts that failed (broker down, timeout, refused).", "sink")
	descSinkUndeliv   = desc("sink_undeliverable_total", "Records skipped as impossible to deliver (rejected payload, too large).", "sink")
	descSinkDropped   = desc("sink_dropped_total", "Records the sink's outbox dropped before delivery, by reason: full, age, rejected, corrupt, disk_full.", "sink", "reason")
	descSinkDepth     = desc("sink_outbox_depth", "Undelivered records in the sink's outbox.", "sink")
	descSinkDepthB    = desc("sink_outbox_depth_bytes", "Bytes of the undelivered records in the sink's outbox.", "sink")
	descSinkOldest    = desc("sink_oldest_age_seconds", "Age of the oldest undelivered record in the sink's outbox (0 when none).", "sink")
	descSinkDiskFull  = desc("sink_outbox_disk_full", "1 while the sink's outbox finds its file system full (new records dropped, reason disk_full), else 0.", "sink")
	descSinkUp        = desc("sink_up", "1 while the sink's deliveries succeed, 0 from a failed attempt until the next success.", "sink")
)

// appCollector reads the watched app at scrape time.
type appCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (c appCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStreamsActive, descStreams, descStartAttempts, descStreamInfo, descAccessUnits, descDecoded,
		descInferred, descDropped, descDetections, descQueue, descPool, descPoolCap, descReconnects,
		descConnFail, descRTPPackets, descRTPLost, descSourceDropped, descModelLoaded, descModelLoadSec,
		descModelLoads, descBatches, descBatchFrames, descThroughput, descCapacity, descEfficiency,
		descGPUUsed, descGPUTotal, descZoneObjects, descZoneEvents, descLineCross, descSinkDelivered, descSinkRetried,
		descSinkFailed, descSinkUndeliv, descSinkDropped, descSinkDepth, descSinkDepthB, descSinkOldest, descSinkDiskFull, descSinkUp} {
		ch <- d
	}
	for _, d := range evidenceDescs {
		ch <- d
	}
	ch <- descObjectsDropped
	for _, d := range liveDescs {
		ch <- d
	}
	for _, d := range activityDescs {
		ch <- d
	}
	for _, d := range recordDescs { // metrics/record.go
		ch <- d
	}
	c.m.streamLatency.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c appCollector) Collect(ch chan<- prometheus.Metric) {
	ref := c.m.watched.Load()
	if ref == nil {
		c.m.streamLatency.Collect(ch)
		return
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	collectDecoderPools(ref.Source, ch)
	streams := ref.Streams()
	running := make(map[string]bool, len(streams))
	active := 0
	byState := map[defs.StreamState]int{}
	for i := range streams {
		s := &streams[i]
		id := s.Decl.ID
		running[id] = true
		byState[s.State()]++
		if !s.Ended && s.Retry == nil {
			active++
		}
		if s.Retry != nil {
			gauge(descStartAttempts, float64(s.Retry.Attempts), id)
		}
		device := "cpu"
		if s.Device >= 0 {
			device = "cuda:" + strconv.Itoa(s.Device)
		}
		gauge(descStreamInfo, 1, id, s.Decl.Model, strconv.FormatBool(s.Live), device)
		st := &s.Counters
		counter(descAccessUnits, float64(st.AccessUnits), id)
		counter(descDecoded, float64(st.Decoded), id)
		counter(descInferred, float64(st.Inferred), id)
		for _, r := range defs.DropReasons() {
			counter(descDropped, float64(st.Dropped[r]), id, r.String())
		}
		for label, n := range s.Classes {
			counter(descDetections, float64(n), id, label)
		}
		gauge(descQueue, float64(s.Queue), id)
		collectActivity(id, s.Activity, ch)
		collectObjects(id, st, ch)
		if ps := s.Pool; ps != nil {
			gauge(descPool, float64(ps.InUse), id, "in_use")
			gauge(descPool, float64(ps.Free), id, "free")
			gauge(descPoolCap, float64(ps.Capacity), id)
		}
		if sc := s.Scene; sc != nil {
			for _, z := range sc.Zones {
				gauge(descZoneObjects, float64(z.Objects), id, z.Zone, z.Class)
				counter(descZoneEvents, float64(z.Enter), id, z.Zone, "enter", z.Class)
				counter(descZoneEvents, float64(z.Leave), id, z.Zone, "leave", z.Class)
				counter(descZoneEvents, float64(z.Loiter), id, z.Zone, "loiter", z.Class)
			}
			for _, l := range sc.Lines {
				counter(descLineCross, float64(l.In), id, l.Line, "in", l.Class)
				counter(descLineCross, float64(l.Out), id, l.Line, "out", l.Class)
			}
		}
		if ss := s.Source; ss != nil {
			counter(descReconnects, float64(ss.Reconnects), id)
			counter(descConnFail, float64(ss.ConnectFailures), id)
			counter(descRTPPackets, float64(ss.Packets), id)
			counter(descRTPLost, float64(ss.Lost), id)
			counter(descSourceDropped, float64(ss.Dropped+ss.Overflow), id)
			for _, e := range [...]struct {
				name string
				v    uint64
			}{
				{"reordered", ss.Reordered}, {"duplicate", ss.Duplicates}, {"late", ss.Late},
				{"garbage", ss.Garbage}, {"foreign", ss.Foreign}, {"ssrc_change", ss.SSRCChanges},
				{"sender_change", ss.SenderChanges}, {"damaged", ss.Damaged}, {"discontinuity", ss.Discontinuities},
				{"watchdog", ss.Watchdog}, {"outage", ss.Outages}, {"timestamp_outlier", ss.TimestampOutliers},
				{"timestamp_jump", ss.TimestampJumps}, {"decode_error", ss.DecodeErrors},
			} {
				counter(descSourceEvents, float64(e.v), id, e.name)
			}
			counter(descOutageSec, ss.OutageSeconds, id)
		}
		state := streamState(s)
		for _, st := range streamStates {
			v := 0.0
			if st == state {
				v = 1
			}
			gauge(descStreamState, v, id, st)
		}
	}
	gauge(descStreamsActive, float64(active))
	for _, st := range defs.StreamStates() {
		gauge(descStreams, float64(byState[st]), string(st))
	}
	c.m.forget(running)
	c.m.streamLatency.Collect(ch)

	for _, mi := range ref.Models() {
		name := mi.Decl.Name
		if !mi.Loaded {
			gauge(descModelLoaded, 0, name)
			continue
		}
		gauge(descModelLoaded, 1, name)
		gauge(descModelLoadSec, mi.LoadTime.Seconds(), name)
		counter(descModelLoads, float64(mi.Loads), name)
		counter(descBatches, float64(mi.Batches), name)
		counter(descBatchFrames, float64(mi.BatchFrames), name)
	}
	for name, r := range c.m.rates.Models() {
		gauge(descThroughput, r.AchievedFPS, name)
		gauge(descCapacity, r.WorkerFPS, name, "inference")
		gauge(descCapacity, r.StreamsFPS, name, "decode_preprocess")
		gauge(descEfficiency, r.Efficiency, name)
	}
	collectEvidence(ref.Source, ch)
	collectRecording(ref.Source, ch)
	collectLive(ref.Source, ch)
	for _, g := range ref.GPUs() {
		dev := strconv.Itoa(g.Ordinal)
		gauge(descGPUUsed, float64(g.MemUsed), dev)
		gauge(descGPUTotal, float64(g.MemTotal), dev)
	}
	if ss, ok := ref.Source.(defs.Sinks); ok {
		for _, si := range ss.Sinks() {
			collectSink(si, counter, gauge)
		}
	}
}

// collectSink emits one delivering sink's series.
func collectSink(si defs.SinkInfo, counter, gauge func(*prometheus.Desc, float64, ...string)) {
	counter(descSinkDelivered, float64(si.Delivered), si.Name)
	counter(descSinkRetried, float64(si.Retried), si.Name)
	counter(descSinkFailed, float64(si.Failed), si.Name)
	counter(descSinkUndeliv, float64(si.Undeliverable), si.Name)
	for reason, n := range si.Dropped {
		counter(descSinkDropped, float64(n), si.Name, reason)
	}
	gauge(descSinkDepth, float64(si.Depth), si.Name)
	gauge(descSinkDepthB, float64(si.DepthBytes), si.Name)
	gauge(descSinkOldest, si.OldestAge.Seconds(), si.Name)
	up := 0.0
	if si.Up {
		up = 1
	}
	gauge(descSinkUp, up, si.Name)
	full := 0.0
	if !si.DiskFullSince.IsZero() {
		full = 1
	}
	gauge(descSinkDiskFull, full, si.Name)
}

// streamStates are the values of vinfer_stream_state's state label.
var streamStates = [...]string{live.StateConnecting, live.StateWaitingKeyframe, live.StateRunning, live.StateStalled, live.StateFailed, "ended", "stopped", "degraded"}

// streamState is a stream's state: its live source's health, or for a file starting
// (connecting), running, ended or failed.
func streamState(s *defs.StreamInfo) string {
	switch st := s.State(); {
	case st == defs.StateFailed:
		return live.StateFailed
	case st == defs.StateEnded:
		return "ended"
	case st == defs.StateStopped:
		return "stopped"
	case st == defs.StateDegraded:
		return "degraded"
	case s.Source != nil && s.Source.State != "":
		return s.Source.State
	case st == defs.StateStarting:
		return live.StateConnecting
	}
	return live.StateRunning
}
