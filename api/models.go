package api

import (
	"net/http"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
)

// ModelView is a declared model as the API reports it.
type ModelView struct {
	Name     string `json:"name"`
	Path     string `json:"path"`
	Provider string `json:"provider"`
	Preload  bool   `json:"preload"`
	// Loaded is false until the first stream uses the model (or it is preloaded).
	Loaded bool `json:"loaded"`
	// Family, Input, MaxBatch and Classes describe the serving version.
	Family   string `json:"family,omitempty"`
	Input    *size  `json:"input,omitempty"`
	MaxBatch int    `json:"max_batch,omitempty"`
	// Batch is the model's batch dimension: "1" (fixed), "dynamic", or "dynamic (rewritten
	// from 1)" for a batch-1 model vinfer made dynamic at load.
	Batch   string `json:"batch,omitempty"`
	Classes int    `json:"classes,omitempty"`
	// LoadSeconds is how long the serving version took to load.
	LoadSeconds float64 `json:"load_seconds,omitempty"`
	// Loads counts successful loads (first load and reloads).
	Loads int64 `json:"loads"`
	// LastError is the last failed reload's error (the previous version kept serving).
	LastError string `json:"last_error,omitempty"`
	// Streams using the model, and the inference runs and frames so far.
	Streams []string `json:"streams"`
	Batches int64    `json:"batches"`
	Frames  int64    `json:"frames"`
	// FPS, Efficiency and Bottleneck are the model's rates over the last few seconds
	// (metrics.ModelRate).
	FPS        float64 `json:"fps"`
	Efficiency float64 `json:"efficiency"`
	Bottleneck string  `json:"bottleneck,omitempty"`

	// Precision is what the serving version computes in: "fp32", or "fp16" with the load
	// check's figures and the layout (docs/models.md "Precision").
	Precision string `json:"precision,omitempty"`
}

type size struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

func (s *Server) modelView(mi defs.ModelInfo) ModelView {
	d := &mi.Decl
	v := ModelView{Name: d.Name, Path: d.Path, Provider: d.Provider.String(), Preload: d.Preload, Streams: []string{},
		Loads: mi.Loads, LastError: mi.LastError, Batches: mi.Batches, Frames: mi.BatchFrames}
	if mi.Loaded {
		v.Loaded = true
		v.Family = mi.Family
		v.Input = &size{mi.InputW, mi.InputH}
		v.MaxBatch, v.Batch, v.Precision = mi.MaxBatch, mi.Batch, mi.Precision
		v.Classes = len(mi.Labels)
		v.LoadSeconds = round2(mi.LoadTime.Seconds()*1000) / 1000
	}
	for _, st := range s.App.Streams() {
		if st.Decl.Model == d.Name {
			v.Streams = append(v.Streams, st.Decl.ID)
		}
	}
	if r, ok := s.Metrics.Rates().Models()[d.Name]; ok {
		v.FPS, v.Efficiency, v.Bottleneck = round2(r.AchievedFPS), round2(r.Efficiency), r.Bottleneck
	}
	return v
}

// listModels answers GET /api/models: {"models": [ModelView...]} sorted by name.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	out := []ModelView{}
	for _, mi := range s.App.Models() {
		out = append(out, s.modelView(mi))
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

// getModel answers GET /api/models/{name}.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	mi, ok := s.App.Model(name)
	if !ok {
		writeError(w, http.StatusNotFound, "no model %q is declared: GET /api/models lists them", name)
		return
	}
	writeJSON(w, http.StatusOK, s.modelView(mi))
}

// reloadModel answers POST /api/models/{name}/reload: it loads the model's file again, warms it
// up and swaps it in between batches (a model not loaded yet is loaded). 200 with the model;
// 404 for an undeclared model; 500 when loading failed, the previous version still serving.
func (s *Server) reloadModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.App.Model(name); !ok {
		writeError(w, http.StatusNotFound, "no model %q is declared: GET /api/models lists them", name)
		return
	}
	t0 := time.Now()
	err := s.App.ReloadModel(name)
	s.Metrics.ObserveReload(name, err)
	if err != nil {
		s.Log.Error("api: model reload failed", "model", name, "err", err)
		writeError(w, http.StatusInternalServerError, "reloading model %s failed: %v (the previous version keeps serving; fix the file and retry)", name, err)
		return
	}
	s.Log.Info("api: model reloaded", "model", name, "duration", time.Since(t0).Round(time.Millisecond))
	mi, _ := s.App.Model(name)
	writeJSON(w, http.StatusOK, s.modelView(mi))
}
