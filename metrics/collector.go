package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/pipeline"
	"github.com/vinfer/vinfer/source/live"
)

// LiveSource is implemented by network sources (RTSP, RTP, GB28181) that count packets, loss
// and reconnects.
type LiveSource interface {
	Stats() live.Stats
}

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, labels, nil)
}

// Scrape-time metrics, read from the watched app.
var (
	descStreamsActive = desc("streams_active", "Streams running (added and not ended).")
	descStreamInfo    = desc("stream_info", "One series per stream, value 1, naming its model and whether its source is live.", "stream", "model", "live")
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
	descModelLoaded   = desc("model_loaded", "1 when the model is loaded, 0 when only declared.", "model")
	descModelLoadSec  = desc("model_load_seconds", "Time the serving version of the model took to load (session creation).", "model")
	descModelLoads    = desc("model_loads_total", "Successful loads of the model (first load and reloads).", "model")
	descBatches       = desc("inference_batches_total", "Inference runs.", "model")
	descBatchFrames   = desc("inference_batch_frames_total", "Frames in inference runs (divide by inference_batches_total for the mean batch).", "model")
	descThroughput    = desc("pipeline_throughput_frames_per_second", "Frames inferred per second over the last window, all streams of the model.", "model")
	descCapacity      = desc("stage_capacity_frames_per_second", "Frames per second a stage could sustain at its measured busy time per frame: inference (the model's worker) or decode_preprocess (the streams' goroutines together).", "model", "stage")
	descEfficiency    = desc("pipeline_efficiency_ratio", "Achieved fps divided by the bottleneck stage's fps over the last window (1: as fast as the slowest stage allows).", "model")
	descGPUUsed       = desc("gpu_memory_used_bytes", "GPU memory in use on the device (all processes), when a model runs on a GPU.", "device")
	descGPUTotal      = desc("gpu_memory_total_bytes", "GPU memory of the device, when a model runs on a GPU.", "device")
)

// appCollector reads the watched app at scrape time.
type appCollector struct{ m *Metrics }

// Describe implements prometheus.Collector.
func (c appCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStreamsActive, descStreamInfo, descAccessUnits, descDecoded,
		descInferred, descDropped, descDetections, descQueue, descPool, descPoolCap, descReconnects,
		descConnFail, descRTPPackets, descRTPLost, descSourceDropped, descModelLoaded, descModelLoadSec,
		descModelLoads, descBatches, descBatchFrames, descThroughput, descCapacity, descEfficiency,
		descGPUUsed, descGPUTotal} {
		ch <- d
	}
	c.m.streamLatency.Describe(ch)
}

// Collect implements prometheus.Collector.
func (c appCollector) Collect(ch chan<- prometheus.Metric) {
	a := c.m.watched.Load()
	if a == nil {
		c.m.streamLatency.Collect(ch)
		return
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	streams := a.Pipeline.Streams()
	running := make(map[string]bool, len(streams))
	active := 0
	for _, s := range streams {
		running[s.ID] = true
		if !s.Ended {
			active++
		}
		live := "false"
		if s.Live {
			live = "true"
		}
		gauge(descStreamInfo, 1, s.ID, s.Model, live)
		st := s.Stats
		counter(descAccessUnits, float64(st.AccessUnits.Load()), s.ID)
		counter(descDecoded, float64(st.Decoded.Load()), s.ID)
		counter(descInferred, float64(st.Inferred.Load()), s.ID)
		for _, r := range pipeline.DropReasons() {
			counter(descDropped, float64(st.Dropped[r].Load()), s.ID, r.String())
		}
		for label, n := range st.PerClass() {
			counter(descDetections, float64(n), s.ID, label)
		}
		gauge(descQueue, float64(s.Queue), s.ID)
		if s.Pool != nil {
			ps := s.Pool.Stats()
			gauge(descPool, float64(ps.InUse), s.ID, "in_use")
			gauge(descPool, float64(ps.Free), s.ID, "free")
			gauge(descPoolCap, float64(ps.Capacity), s.ID)
		}
		if ls, ok := s.Source.(LiveSource); ok {
			ss := ls.Stats()
			counter(descReconnects, float64(ss.Reconnects), s.ID)
			counter(descConnFail, float64(ss.ConnectFailures), s.ID)
			counter(descRTPPackets, float64(ss.Packets), s.ID)
			counter(descRTPLost, float64(ss.Lost), s.ID)
			counter(descSourceDropped, float64(ss.Dropped+ss.Overflow), s.ID)
		}
	}
	gauge(descStreamsActive, float64(active))
	c.m.forget(running)
	c.m.streamLatency.Collect(ch)

	batches := a.Pipeline.ModelStats()
	for _, name := range a.Registry.Names() {
		e := a.Registry.Loaded(name)
		var cur *model.Model
		if e != nil {
			cur = e.Current()
		}
		if cur == nil {
			gauge(descModelLoaded, 0, name)
			continue
		}
		gauge(descModelLoaded, 1, name)
		gauge(descModelLoadSec, cur.LoadTime.Seconds(), name)
		counter(descModelLoads, float64(e.Loads()), name)
		if b, ok := batches[name]; ok {
			counter(descBatches, float64(b[0]), name)
			counter(descBatchFrames, float64(b[1]), name)
		}
	}
	for name, r := range c.m.rates.Models(a) {
		gauge(descThroughput, r.AchievedFPS, name)
		gauge(descCapacity, r.WorkerFPS, name, "inference")
		gauge(descCapacity, r.StreamsFPS, name, "decode_preprocess")
		gauge(descEfficiency, r.Efficiency, name)
	}
	for _, g := range c.m.gpu.read() {
		gauge(descGPUUsed, float64(g.total-g.free), g.device)
		gauge(descGPUTotal, float64(g.total), g.device)
	}
}
