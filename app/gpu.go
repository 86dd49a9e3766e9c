package app

import (
	"log/slog"
	"sync"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/cuda"
	"github.com/vinfer/vinfer/internal/defs"
)

// gpuMemory holds the GPU that models with a GPU execution provider run on when no nvdec
// stream opened it (ONNX Runtime's default device 0), so its memory can be reported. The device
// is opened once, at New: retaining a primary context is slow and takes the driver's lock.
type gpuMemory struct {
	mu  sync.Mutex
	dev *cuda.Device
}

func (g *gpuMemory) open(cfg *config.Config, log *slog.Logger) {
	for _, m := range cfg.Models {
		if m.Provider.OnGPU() {
			d, err := cuda.Open(0)
			if err != nil {
				log.Warn("GPU memory will not be reported", "err", err)
				return
			}
			g.mu.Lock()
			g.dev = d
			g.mu.Unlock()
			return
		}
	}
}

func (g *gpuMemory) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.dev != nil {
		g.dev.Close()
		g.dev = nil
	}
}

// GPUs returns every GPU in use: those of nvdec streams and the one GPU models run on.
func (a *App) GPUs() []defs.GPUInfo {
	devs := a.Devices.Opened()
	a.gpuMem.mu.Lock()
	if d := a.gpuMem.dev; d != nil {
		devs = append([]*cuda.Device{d}, devs...)
	}
	a.gpuMem.mu.Unlock()
	var out []defs.GPUInfo
	seen := map[int]bool{}
	for _, d := range devs {
		if seen[d.Ordinal()] {
			continue
		}
		seen[d.Ordinal()] = true
		gi := defs.GPUInfo{Ordinal: d.Ordinal(), Name: d.Name()}
		if free, total, err := d.MemInfo(); err == nil {
			gi.MemUsed, gi.MemTotal = total-free, total
		}
		out = append(out, gi)
	}
	return out
}
