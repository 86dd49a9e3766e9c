package app

import (
	"fmt"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/model"
	"github.com/vinfer/vinfer/pipeline"
)

// defaultMaxDelay is a model's batching delay when its declaration leaves it out.
const defaultMaxDelay = 2 * time.Millisecond

// models adapts the registry to pipeline.Models.
type models struct{ a *App }

// Engine returns the registry entry of a model for host frames (device −1) or for the frames
// of a GPU.
func (m models) Engine(name string, device int) (pipeline.Engine, error) {
	var e *model.Entry
	var err error
	if device < 0 {
		e, err = m.a.Registry.Get(name)
	} else {
		e, err = m.a.Registry.GetDevice(name, device)
	}
	if err != nil {
		return nil, err
	}
	return engine{e}, nil
}

// MaxDelay is the model's declared batching delay (default 2 ms).
func (m models) MaxDelay(name string) time.Duration {
	d, _ := m.a.Registry.Declaration(name)
	if d.MaxDelay == 0 {
		return defaultMaxDelay
	}
	return time.Duration(d.MaxDelay)
}

// Cascades resolves a model's cascade declarations, parent class names to ids.
func (m models) Cascades(name string) []pipeline.Cascade {
	d, _ := m.a.Registry.Declaration(name)
	if len(d.Cascade) == 0 {
		return nil
	}
	var labels []string
	if e := m.a.Registry.Loaded(name); e != nil && e.Current() != nil {
		labels = e.Current().Post.Labels
	}
	var out []pipeline.Cascade
	for _, c := range d.Cascade {
		pc := pipeline.Cascade{Model: c.Model, MinScore: c.MinScore, MaxCrops: c.MaxCrops, Padding: c.Padding, MinSize: c.MinSize,
			Every: c.Every.Period, Once: c.Every.Once, As: c.As}
		for _, want := range c.Classes {
			for id, l := range labels {
				if l == want {
					pc.Classes = append(pc.Classes, id)
				}
			}
		}
		if len(c.Classes) > 0 && len(pc.Classes) == 0 {
			m.a.Log.Warn(fmt.Sprintf("model %s: cascade to %s: none of the classes %v is a label of %s; cascade disabled", name, c.Model, c.Classes, name))
			continue
		}
		out = append(out, pc)
	}
	return out
}

// engine adapts a registry entry to pipeline.Engine.
type engine struct{ e *model.Entry }

func (e engine) Name() string { return e.e.Name() }

// Acquire returns the current version; a GPU version is a pipeline.FrameRunner.
func (e engine) Acquire() pipeline.Runner {
	v := e.e.Acquire()
	if v == nil {
		return nil
	}
	if d, ok := v.OnDevice(); ok {
		return d
	}
	return v
}

// Models returns every declared model, sorted by name.
func (a *App) Models() []defs.ModelInfo {
	names := a.Registry.Names()
	out := make([]defs.ModelInfo, 0, len(names))
	stats := a.Pipeline.ModelStats()
	for _, n := range names {
		out = append(out, a.modelInfo(n, stats))
	}
	return out
}

// Model returns one declared model.
func (a *App) Model(name string) (defs.ModelInfo, bool) {
	if _, ok := a.Registry.Declaration(name); !ok {
		return defs.ModelInfo{}, false
	}
	return a.modelInfo(name, a.Pipeline.ModelStats()), true
}

func (a *App) modelInfo(name string, stats map[string][2]int64) defs.ModelInfo {
	d, _ := a.Registry.Declaration(name)
	mi := defs.ModelInfo{Decl: d}
	if e := a.Registry.Loaded(name); e != nil {
		mi.Loads, mi.LastError = e.Loads(), e.LastError()
		if m := e.Current(); m != nil {
			mi.Loaded = true
			mi.Family = string(m.Family)
			mi.InputW, mi.InputH = m.Pre.Width, m.Pre.Height
			mi.MaxBatch, mi.Batch, mi.Precision = m.MaxBatch(), m.Batch, m.Precision
			mi.Labels = m.Labels()
			mi.LoadTime = m.LoadTime
		}
	}
	if b, ok := stats[name]; ok {
		mi.Batches, mi.BatchFrames = b[0], b[1]
	}
	return mi
}

// ReloadModel loads a model's file again and swaps it in between batches; a model not loaded
// yet is loaded.
func (a *App) ReloadModel(name string) error {
	if _, ok := a.Registry.Declaration(name); !ok {
		return fmt.Errorf("no model %q is declared", name)
	}
	if e := a.Registry.Loaded(name); e != nil {
		return e.Reload()
	}
	_, err := a.Registry.Get(name)
	return err
}
