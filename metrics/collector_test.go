package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
)

// twoGPUs is a running system with one CPU stream and two nvdec streams on GPUs 0 and 1.
type twoGPUs struct{}

func (twoGPUs) Streams() []defs.StreamInfo {
	mk := func(id string, dev int) defs.StreamInfo {
		return defs.StreamInfo{Decl: config.Stream{ID: id, Model: "m"}, Device: dev, Started: time.Now(),
			Counters: defs.StreamCounters{Decoded: 10, Inferred: 9}}
	}
	return []defs.StreamInfo{mk("host", -1), mk("g0", 0), mk("g1", 1)}
}

func (s twoGPUs) Stream(id string) (defs.StreamInfo, bool) {
	for _, st := range s.Streams() {
		if st.Decl.ID == id {
			return st, true
		}
	}
	return defs.StreamInfo{}, false
}

func (twoGPUs) Models() []defs.ModelInfo { return nil }

func (twoGPUs) Model(string) (defs.ModelInfo, bool) { return defs.ModelInfo{}, false }

func (twoGPUs) ReloadModel(string) error { return nil }

func (twoGPUs) GPUs() []defs.GPUInfo {
	return []defs.GPUInfo{{Ordinal: 0, MemUsed: 1 << 30, MemTotal: 140 << 30}, {Ordinal: 1, MemUsed: 2 << 30, MemTotal: 140 << 30}}
}

// TestPerDevice: the memory of every GPU in use and the device of every stream are exported,
// read through the defs interfaces alone (no GPU needed).
func TestPerDevice(t *testing.T) {
	body := scrape(t, twoGPUs{})
	for _, want := range []string{
		`vinfer_gpu_memory_used_bytes{device="0"} 1.073741824e+09`,
		`vinfer_gpu_memory_used_bytes{device="1"} 2.147483648e+09`,
		`vinfer_stream_info{device="cpu",live="false",model="m",stream="host"} 1`,
		`vinfer_stream_info{device="cuda:0",live="false",model="m",stream="g0"} 1`,
		`vinfer_stream_info{device="cuda:1",live="false",model="m",stream="g1"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("missing %s", want)
		}
	}
}
