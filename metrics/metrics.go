// Package metrics exports vinfer's Prometheus metrics (client_golang, names per the Prometheus
// conventions: prefix vinfer_, base units, counters ending in _total, durations in _seconds).
//
// Two kinds of sources feed them. As the pipeline's Observer, Metrics sees every frame and batch
// (ObserveResult, ObserveBatch) and fills histograms: per-stage durations, end-to-end latency,
// batch sizes. Everything else is read when Prometheus scrapes, from the watched Source (the
// small interfaces of package defs, which the app satisfies): stream counters, queue depths,
// frame pools, source statistics, models, the memory of every GPU in use, and the windowed
// rates of Rates (fps and pipeline efficiency).
//
// Series are labelled by stream id and model name, never by source URL (URLs can carry
// credentials); a removed stream's series disappear at the next scrape.
package metrics

import (
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/sink"
)

// Namespace prefixes every vinfer metric.
const Namespace = "vinfer"

// Stages are the values of the stage label of vinfer_stage_duration_seconds, in pipeline order.
var Stages = []string{"decode", "preprocess", "queue_wait", "inference", "postprocess", "end_to_end"}

// Stage indexes into Stages.
const (
	stageDecode = iota
	stagePreprocess
	stageQueueWait
	stageInference
	stagePostprocess
	stageEndToEnd
	numStages
)

// Source is what the scrape-time metrics read.
type Source interface {
	defs.Streams
	defs.Models
	defs.GPUs
}

// Metrics is vinfer's metric set. Create it with New, give it to the pipeline as its Observer,
// then Watch the running system. Its methods are safe for concurrent use.
type Metrics struct {
	// Registry holds vinfer's collectors and the Go runtime and process collectors.
	Registry *prometheus.Registry

	stage         *prometheus.HistogramVec // {model, stage}
	streamLatency *prometheus.HistogramVec // {stream}
	batch         *prometheus.HistogramVec // {model}
	reloads       *prometheus.CounterVec   // {model, result}
	requests      *prometheus.CounterVec   // {route, code}
	events        *prometheus.CounterVec   // {transport}
	forwarded     *prometheus.CounterVec   // {node, result}
	subsDropped   *prometheus.CounterVec   // {kind}: subscribers.go

	rates *Rates

	mu      sync.RWMutex
	models  map[string]*modelObs
	streams map[string]*streamObs

	watched atomic.Pointer[sourceRef]
	cluster atomic.Pointer[clusterRef]
}

// modelObs caches one model's observers so the per-frame hook does no label lookups, and sums
// the inference worker's busy time (batch runs + postprocessing) for Rates.
type modelObs struct {
	stage  [numStages]prometheus.Observer
	batch  prometheus.Observer
	busyNs atomic.Int64
}

// streamObs caches one stream's latency observer and sums the decoder goroutine's busy time
// (decode + preprocess of inferred frames) for Rates.
type streamObs struct {
	latency prometheus.Observer
	decNs   atomic.Int64
	prepNs  atomic.Int64
}

// latencyBuckets span 1 ms to ~16 s (stage durations and end-to-end latency, seconds).
var latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 16)

// New returns a metric set with its own registry.
func New() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		models:   map[string]*modelObs{},
		streams:  map[string]*streamObs{},
		stage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "stage_duration_seconds",
			Help: "Time each inferred frame spent in a pipeline stage: decode, preprocess, queue_wait (preprocessed, waiting for its batch), " +
				"inference (its batch's run), postprocess (output decoding and NMS), end_to_end (decoder work to result).",
			Buckets: latencyBuckets,
		}, []string{"model", "stage"}),
		streamLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "stream_latency_seconds",
			Help:    "End-to-end latency of each inferred frame (decoder work to result), per stream.",
			Buckets: latencyBuckets,
		}, []string{"stream"}),
		batch: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: Namespace, Name: "batch_size",
			Help:    "Frames per inference run.",
			Buckets: []float64{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 64},
		}, []string{"model"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "model_reloads_total",
			Help: "Model reloads requested through the API, by result (ok or error).",
		}, []string{"model", "result"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "http_requests_total",
			Help: "HTTP API requests by route pattern and status code.",
		}, []string{"route", "code"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "events_sent_total",
			Help: "Detection events sent to live subscribers, by transport (sse or websocket).",
		}, []string{"transport"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: Namespace, Name: "cluster_forwarded_requests_total",
			Help: "Per-stream API requests this node forwarded to the node that runs the stream, by that node and result (ok: it answered, error: it did not).",
		}, []string{"node", "result"}),
	}
	m.subsDropped = newSubscribersDropped()
	m.rates = newRates(m)
	m.Registry.MustRegister(m.subsDropped)
	m.Registry.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.stage, m.batch, m.reloads, m.requests, m.events, m.forwarded,
		clusterCollector{&m.cluster},
		gbCollector{m},
		gbUpCollector{m},
		onvifCollector{m}, // metrics/onvif.go
		rtspMetaCollector{m},
		rtspAuthCollector{m},
		nativeCollector{},
		appCollector{m}, // also collects streamLatency, after dropping removed streams' series
	)
	return m
}

// sourceRef boxes the watched Source for an atomic pointer.
type sourceRef struct{ Source }

// Watch makes the scrape-time metrics read src and starts the rate sampler; it stops when done
// is closed. Watch one system per Metrics.
func (m *Metrics) Watch(src Source, done <-chan struct{}) {
	m.watched.Store(&sourceRef{src})
	m.rates.src.Store(&streamsRef{src})
	go m.rates.run(time.Second, done)
}

// Rates returns the windowed rates (fps, efficiency) computed for the watched app.
func (m *Metrics) Rates() *Rates { return m.rates }

// Handler serves the registry in the Prometheus text or protobuf exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// ObserveResult observes one inferred frame (pipeline.Observer). It allocates nothing once the
// frame's model and stream have been seen.
func (m *Metrics) ObserveResult(r *sink.Result) {
	mo := m.model(r.Model)
	so := m.stream(r.Stream)
	e2e := r.Decode + r.Latency + r.Postprocess
	mo.stage[stageDecode].Observe(r.Decode.Seconds())
	mo.stage[stagePreprocess].Observe(r.Preprocess.Seconds())
	mo.stage[stageQueueWait].Observe(r.QueueWait.Seconds())
	mo.stage[stageInference].Observe(r.Inference.Seconds())
	mo.stage[stagePostprocess].Observe(r.Postprocess.Seconds())
	mo.stage[stageEndToEnd].Observe(e2e.Seconds())
	so.latency.Observe(e2e.Seconds())
	// The worker runs a batch once for all its frames: charge each frame its share.
	share := int64(r.Inference)
	if r.Batch > 1 {
		share /= int64(r.Batch)
	}
	mo.busyNs.Add(share + int64(r.Postprocess))
	so.decNs.Add(int64(r.Decode))
	so.prepNs.Add(int64(r.Preprocess))
}

// ObserveBatch observes one inference run of size frames (pipeline.Observer).
func (m *Metrics) ObserveBatch(model string, size int) {
	m.model(model).batch.Observe(float64(size))
}

// ObserveReload counts a model reload requested through the API.
func (m *Metrics) ObserveReload(model string, err error) {
	res := "ok"
	if err != nil {
		res = "error"
	}
	m.reloads.WithLabelValues(model, res).Inc()
}

// ObserveRequest counts an HTTP API request by its route pattern (not its path, which would
// make a series per id) and status code.
func (m *Metrics) ObserveRequest(route string, code int) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
}

// ObserveEvent counts a detection event sent over transport ("sse" or "websocket").
func (m *Metrics) ObserveEvent(transport string) { m.events.WithLabelValues(transport).Inc() }

func (m *Metrics) model(name string) *modelObs {
	m.mu.RLock()
	mo := m.models[name]
	m.mu.RUnlock()
	if mo != nil {
		return mo
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if mo = m.models[name]; mo == nil {
		mo = &modelObs{batch: m.batch.WithLabelValues(name)}
		for i, s := range Stages {
			mo.stage[i] = m.stage.WithLabelValues(name, s)
		}
		m.models[name] = mo
	}
	return mo
}

func (m *Metrics) stream(id string) *streamObs {
	m.mu.RLock()
	so := m.streams[id]
	m.mu.RUnlock()
	if so != nil {
		return so
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if so = m.streams[id]; so == nil {
		so = &streamObs{latency: m.streamLatency.WithLabelValues(id)}
		m.streams[id] = so
	}
	return so
}

// forget drops the histogram series of streams no longer running (called at scrape).
func (m *Metrics) forget(running map[string]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for id := range m.streams {
		if !running[id] {
			delete(m.streams, id)
			m.streamLatency.DeleteLabelValues(id)
		}
	}
}

// streamBusy returns a stream's summed decode and preprocess nanoseconds (0, 0 if unseen).
func (m *Metrics) streamBusy(id string) (dec, prep int64) {
	m.mu.RLock()
	so := m.streams[id]
	m.mu.RUnlock()
	if so == nil {
		return 0, 0
	}
	return so.decNs.Load(), so.prepNs.Load()
}

// modelBusy returns a model worker's summed busy nanoseconds.
func (m *Metrics) modelBusy(name string) int64 {
	m.mu.RLock()
	mo := m.models[name]
	m.mu.RUnlock()
	if mo == nil {
		return 0
	}
	return mo.busyNs.Load()
}
