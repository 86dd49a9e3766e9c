package metrics

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
)

// DefaultWindow is the span Rates averages over.
const DefaultWindow = 5 * time.Second

// Rates turns the app's cumulative counters into rates over a sliding window: per-stream fps and
// latency for the API and the web page, and per-model pipeline efficiency for /metrics. A
// sampler goroutine (started by Metrics.Watch) records the counters every second; a query
// compares the counters now with the oldest sample inside the window.
type Rates struct {
	// Window is the span rates average over (DefaultWindow).
	Window time.Duration

	m       *Metrics
	src     atomic.Pointer[streamsRef]
	mu      sync.Mutex
	samples []sample // oldest first
}

type sample struct {
	at      time.Time
	streams map[string]streamSample
	models  map[string]int64 // worker busy ns
}

type streamSample struct {
	started                  time.Time
	model                    string
	decoded, inferred, drops int64
	latencyNs, decNs, prepNs int64
}

// StreamRate is one stream's activity over the window.
type StreamRate struct {
	// DecodedFPS, InferredFPS and DroppedFPS are frames per second decoded, inferred and
	// dropped (all reasons).
	DecodedFPS, InferredFPS, DroppedFPS float64
	// Latency is the mean time from a frame leaving the decoder to its result (0 with no
	// inferred frame in the window).
	Latency time.Duration
	// Window is the span actually measured (shorter than Rates.Window right after a start).
	Window time.Duration
}

// ModelRate is one model's throughput against its stages' capacities over the window.
type ModelRate struct {
	// AchievedFPS is the frames inferred per second, over all streams using the model.
	AchievedFPS float64
	// WorkerFPS is what the inference worker could sustain: frames per second of its busy time
	// (batch runs, each frame charged its share, plus postprocessing). 0 when it was idle.
	WorkerFPS float64
	// StreamsFPS is what the streams' decode+preprocess goroutines could sustain together
	// (each stream: inferred frames per second of its busy time; streams run in parallel).
	StreamsFPS float64
	// BottleneckFPS is the smaller of the two, Bottleneck its stage: "inference" or
	// "decode_preprocess".
	BottleneckFPS float64
	Bottleneck    string
	// Efficiency is AchievedFPS / BottleneckFPS: near 1 when the pipeline runs as fast as its
	// slowest stage allows (a file stream with the stages overlapping well); well below 1 when
	// frames arrive slower than the stages could take them (a live camera: headroom) or stages
	// stall each other.
	Efficiency float64
}

func newRates(m *Metrics) *Rates { return &Rates{Window: DefaultWindow, m: m} }

// run samples a every interval until done closes.
func (r *Rates) run(interval time.Duration, done <-chan struct{}) {
	t := time.NewTicker(interval)
	defer t.Stop()
	r.record(r.take())
	for {
		select {
		case <-done:
			return
		case <-t.C:
			r.record(r.take())
		}
	}
}

func (r *Rates) record(s sample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, s)
	// Keep one sample older than the window so a query always finds a full-window base.
	cut := 0
	for cut+1 < len(r.samples) && s.at.Sub(r.samples[cut+1].at) >= r.Window {
		cut++
	}
	r.samples = append(r.samples[:0], r.samples[cut:]...)
}

// streamsRef boxes the watched streams for an atomic pointer.
type streamsRef struct{ s defs.Streams }

func (r *Rates) take() sample {
	s := sample{at: time.Now(), streams: map[string]streamSample{}, models: map[string]int64{}}
	src := r.src.Load()
	if src == nil {
		return s
	}
	for _, st := range src.s.Streams() {
		id, model := st.Decl.ID, st.Decl.Model
		dec, prep := r.m.streamBusy(id)
		c := &st.Counters
		s.streams[id] = streamSample{started: st.Started, model: model,
			decoded: c.Decoded, inferred: c.Inferred, drops: c.DroppedTotal(),
			latencyNs: c.LatencyNanos, decNs: dec, prepNs: prep}
		if _, ok := s.models[model]; !ok {
			s.models[model] = r.m.modelBusy(model)
		}
	}
	return s
}

// base returns the oldest sample no older than the window (the newest if all are older).
func (r *Rates) base(now time.Time) (sample, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, s := range r.samples {
		if now.Sub(s.at) <= r.Window || i == len(r.samples)-1 {
			return s, true
		}
	}
	return sample{}, false
}

// delta is one stream's counter increase over the window and the time it spans.
type delta struct {
	streamSample
	dt time.Duration
}

// window samples the counters now and returns them with the window's base sample.
func (r *Rates) window() (cur, base sample, ok bool) {
	cur = r.take()
	base, ok = r.base(cur.at)
	return cur, base, ok
}

// deltas returns each running stream's counter increase over the window.
func deltas(cur, base sample, ok bool) map[string]delta {
	out := make(map[string]delta, len(cur.streams))
	for id, c := range cur.streams {
		b, had := base.streams[id]
		since := base.at
		if !ok || !had || !b.started.Equal(c.started) {
			b, since = streamSample{}, c.started // new or re-added stream: count from its start
		}
		d := delta{dt: cur.at.Sub(since)}
		d.model = c.model
		d.decoded, d.inferred, d.drops = c.decoded-b.decoded, c.inferred-b.inferred, c.drops-b.drops
		d.latencyNs = c.latencyNs - b.latencyNs
		d.decNs, d.prepNs = c.decNs-b.decNs, c.prepNs-b.prepNs
		out[id] = d
	}
	return out
}

// Stream returns a stream's rates; ok is false for an unknown stream.
func (r *Rates) Stream(id string) (StreamRate, bool) {
	d, ok := deltas(r.window())[id]
	if !ok {
		return StreamRate{}, false
	}
	return d.rate(), true
}

// Streams returns every running stream's rates.
func (r *Rates) Streams() map[string]StreamRate {
	ds := deltas(r.window())
	out := make(map[string]StreamRate, len(ds))
	for id, d := range ds {
		out[id] = d.rate()
	}
	return out
}

func (d delta) rate() StreamRate {
	sec := d.dt.Seconds()
	if sec <= 0 {
		return StreamRate{}
	}
	s := StreamRate{DecodedFPS: float64(d.decoded) / sec, InferredFPS: float64(d.inferred) / sec,
		DroppedFPS: float64(d.drops) / sec, Window: d.dt}
	if d.inferred > 0 {
		s.Latency = time.Duration(d.latencyNs / d.inferred)
	}
	return s
}

// Models returns the rates of every model used by a running stream.
func (r *Rates) Models() map[string]ModelRate {
	cur, base, ok := r.window()
	ds := deltas(cur, base, ok)
	type acc struct {
		frames  int64
		dt      time.Duration
		streams float64
	}
	accs := map[string]*acc{}
	for _, d := range ds {
		ac := accs[d.model]
		if ac == nil {
			ac = &acc{}
			accs[d.model] = ac
		}
		ac.frames += d.inferred
		ac.dt = max(ac.dt, d.dt)
		if d.inferred > 0 {
			// Decode time is known for inferred frames only; frames skipped by an interval or
			// fps cap were decoded too, at the same cost per frame.
			perDecoded := float64(d.decNs) / float64(d.inferred)
			busy := perDecoded*float64(d.decoded) + float64(d.prepNs)
			if busy > 0 {
				ac.streams += float64(d.inferred) / (busy / 1e9)
			}
		}
	}
	out := make(map[string]ModelRate, len(accs))
	for name, ac := range accs {
		var mr ModelRate
		if sec := ac.dt.Seconds(); sec > 0 {
			mr.AchievedFPS = float64(ac.frames) / sec
		}
		busy := cur.models[name]
		if b, had := base.models[name]; ok && had {
			busy -= b
		}
		if busy > 0 && ac.frames > 0 {
			mr.WorkerFPS = float64(ac.frames) / (float64(busy) / 1e9)
		}
		mr.StreamsFPS = ac.streams
		mr.BottleneckFPS, mr.Bottleneck = mr.WorkerFPS, "inference"
		if mr.StreamsFPS > 0 && (mr.WorkerFPS == 0 || mr.StreamsFPS < mr.WorkerFPS) {
			mr.BottleneckFPS, mr.Bottleneck = mr.StreamsFPS, "decode_preprocess"
		}
		if mr.BottleneckFPS > 0 {
			mr.Efficiency = math.Min(mr.AchievedFPS/mr.BottleneckFPS, 1)
		}
		out[name] = mr
	}
	return out
}
