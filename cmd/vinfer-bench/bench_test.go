package main

import (
	"context"
	"io"
	"math"
	"os"
	"testing"
	"time"

	"github.com/vinfer/vinfer/media"
)

const (
	testClip  = "../../assets/videos/car-detection.mp4"
	testModel = "../../assets/models/yolox_nano_416.onnx"
)

func needAssets(t *testing.T) {
	t.Helper()
	for _, p := range []string{testClip, testModel} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s: %v (scripts/setup.sh fetches the assets)", p, err)
		}
	}
}

// cpuOptions are the bench's settings on the CPU path: the same code as on a GPU but for the
// decoder and the provider.
func cpuOptions(mode string) options {
	return options{mode: mode, clip: testClip, model: testModel, fps: 30, streams: 2, duration: 500 * time.Millisecond,
		batch: 1, graph: true, cudnn: "HEURISTIC", decoder: "cpu", provider: "cpu", maxDelay: 2 * time.Millisecond}
}

// TestE2EThroughTheApp runs the e2e mode on the CPU path: two looping file streams through
// app.New, the counting sink sees results of both and the latencies from the probes.
func TestE2EThroughTheApp(t *testing.T) {
	needAssets(t)
	for _, paced := range []bool{false, true} {
		o := cpuOptions("e2e")
		o.paced, o.minFrames = paced, 12
		r, err := run(o)
		if err != nil {
			t.Fatal(err)
		}
		res := r.(*e2eResult)
		if res.Mode != "e2e" || res.Frames < 12 || res.Paced != paced || res.Streams != 2 || res.MeanBatch != 1 {
			t.Fatalf("paced %v: %+v", paced, res)
		}
		if math.IsNaN(res.P50ms) || res.P50ms <= 0 || res.P99ms < res.P50ms || math.IsNaN(res.PipeP50ms) {
			t.Fatalf("paced %v: latencies %+v", paced, res)
		}
		if paced && res.OfferedFPS != 60 {
			t.Fatalf("offered %v", res.OfferedFPS)
		}
	}
}

func TestDecodeThroughTheProductDecoder(t *testing.T) {
	needAssets(t)
	r, err := run(cpuOptions("decode"))
	if err != nil {
		t.Fatal(err)
	}
	if res := r.(*decodeResult); res.Frames == 0 || res.Streams != 2 || res.DecFrames != 8 {
		t.Fatalf("%+v", res)
	}
}

func TestBenchConfig(t *testing.T) {
	o := cpuOptions("e2e")
	o.provider, o.decoder, o.workers, o.inflight, o.graph, o.input, o.score = "cuda", "nvdec", 4, 3, false, "640x640", 0.9
	cfg, err := benchConfig(o, 3)
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Models[0]
	if m.Workers != 4 || m.InFlight != 3 || m.CUDAGraph == nil || *m.CUDAGraph || m.Input.Width != 640 ||
		m.ProviderOptions["cudnn_conv_algo_search"] != "HEURISTIC" || *m.ScoreThreshold != 0.9 || m.MaxBatch != 1 {
		t.Fatalf("model %+v", m)
	}
	if len(cfg.Streams) != 3 || cfg.Streams[2].ID != "s002" || cfg.Streams[2].Source != "bench://s002" || !cfg.Streams[2].OnGPU() ||
		cfg.Streams[2].Realtime {
		t.Fatalf("streams %+v", cfg.Streams)
	}
	o.paced = true
	if cfg, err = benchConfig(o, 1); err != nil || !cfg.Streams[0].Realtime || !cfg.Streams[0].Loop {
		t.Fatalf("paced: %v %+v", err, cfg.Streams)
	}
}

// units is a fake source of n access units 40 ms apart.
type units struct {
	n, i int
	au   media.AccessUnit
}

func (u *units) Read(ctx context.Context) (*media.AccessUnit, error) {
	if u.i == u.n {
		return nil, io.EOF
	}
	u.au = media.AccessUnit{PTS: time.Duration(u.i) * 40 * time.Millisecond, DTS: time.Duration(u.i) * 40 * time.Millisecond}
	u.i++
	return &u.au, nil
}
func (u *units) Info() media.StreamInfo { return media.StreamInfo{} }
func (u *units) Live() bool             { return false }
func (u *units) Close() error           { return nil }

// TestProbeArrivals: the first unit is not read before the probe's start; each unit's arrival
// is noted by the frame number of its PTS when it was read.
func TestProbeArrivals(t *testing.T) {
	start := time.Now().Add(20 * time.Millisecond)
	p, url := newProbe("t-arrivals", "", 25, start)
	if url != "bench://t-arrivals" {
		t.Fatal(url)
	}
	p.inner = &units{n: 3}
	for i := range 3 {
		before := time.Now()
		au, err := p.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 && before.Before(start) && time.Now().Before(start) {
			t.Fatal("first unit read before the start")
		}
		if got := p.arrival(au.PTS); got.Before(before) || got.After(time.Now()) {
			t.Fatalf("unit %d: arrival %v outside its read", i, got)
		}
	}
	if _, err := p.Read(context.Background()); err != io.EOF {
		t.Fatalf("end: %v", err)
	}
	if !p.arrival(10 * time.Second).IsZero() {
		t.Fatal("arrival of a unit never read")
	}
}

func TestProbeStartCancelled(t *testing.T) {
	p, _ := newProbe("t-cancel", "", 25, time.Now().Add(time.Hour))
	p.inner = &units{n: 2}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Read(ctx); err != context.Canceled {
		t.Fatalf("err %v", err)
	}
}

func TestPct(t *testing.T) {
	if !math.IsNaN(pct(nil, 0.5)) {
		t.Fatal("empty")
	}
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	if pct(v, 0.5) != 6 || pct(v, 0.99) != 10 || pct(v, 0) != 1 {
		t.Fatal(pct(v, 0.5), pct(v, 0.99))
	}
}
