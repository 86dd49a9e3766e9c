package metrics

import (
	"strconv"
	"sync"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/cuda"
)

// gpuMemory reports device memory when a model runs on a GPU. The device is opened once, at
// Watch (retaining its primary context is slow and takes the driver's lock: never at scrape).
type gpuMemory struct {
	mu      sync.Mutex
	devices []*cuda.Device
}

type gpuReading struct {
	device      string
	free, total uint64
}

// usesGPU reports whether any declared model asks for a GPU execution provider.
func usesGPU(a *app.App) bool {
	for _, m := range a.Config.Models {
		switch m.Provider {
		case "cuda", "tensorrt":
			return true
		}
	}
	return false
}

func (g *gpuMemory) watch(a *app.App) {
	if a.Config == nil || !usesGPU(a) {
		return
	}
	d, err := cuda.Open(0)
	if err != nil {
		a.Log.Warn("metrics: GPU memory will not be reported", "err", err)
		return
	}
	g.mu.Lock()
	g.devices = append(g.devices, d)
	g.mu.Unlock()
}

func (g *gpuMemory) read() []gpuReading {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []gpuReading
	for _, d := range g.devices {
		free, total, err := d.MemInfo()
		if err != nil {
			continue
		}
		out = append(out, gpuReading{device: strconv.Itoa(d.Ordinal()), free: free, total: total})
	}
	return out
}

// close releases the devices opened by watch.
func (g *gpuMemory) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, d := range g.devices {
		d.Close()
	}
	g.devices = nil
}
