package api

import (
	"net/http"
	"time"
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
	Classes  int    `json:"classes,omitempty"`
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
}

type size struct {
	Width  int `json:"width"`
	Height int `json:"height"`
}

func (s *Server) modelView(name string) (ModelView, bool) {
	d, ok := s.App.Registry.Declaration(name)
	if !ok {
		return ModelView{}, false
	}
	v := ModelView{Name: name, Path: d.Path, Provider: d.Provider, Preload: d.Preload, Streams: []string{}}
	if v.Provider == "" {
		v.Provider = "cpu"
	}
	if e := s.App.Registry.Loaded(name); e != nil {
		v.Loads, v.LastError = e.Loads(), e.LastError()
		if m := e.Current(); m != nil {
			v.Loaded = true
			v.Family = string(m.Family)
			v.Input = &size{m.Pre.Width, m.Pre.Height}
			v.MaxBatch = m.MaxBatch()
			v.Classes = len(m.Labels())
			v.LoadSeconds = round2(m.LoadTime.Seconds()*1000) / 1000
		}
	}
	for _, st := range s.App.Pipeline.Streams() {
		if st.Model == name {
			v.Streams = append(v.Streams, st.ID)
		}
	}
	if b, ok := s.App.Pipeline.ModelStats()[name]; ok {
		v.Batches, v.Frames = b[0], b[1]
	}
	if r, ok := s.Metrics.Rates().Models(s.App)[name]; ok {
		v.FPS, v.Efficiency, v.Bottleneck = round2(r.AchievedFPS), round2(r.Efficiency), r.Bottleneck
	}
	return v, true
}

// listModels answers GET /api/models: {"models": [ModelView...]} sorted by name.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	out := []ModelView{}
	for _, n := range s.App.Registry.Names() {
		if v, ok := s.modelView(n); ok {
			out = append(out, v)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": out})
}

// getModel answers GET /api/models/{name}.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	v, ok := s.modelView(name)
	if !ok {
		writeError(w, http.StatusNotFound, "no model %q is declared: GET /api/models lists them", name)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// reloadModel answers POST /api/models/{name}/reload: it loads the model's file again, warms it
// up and swaps it in between batches (a model not loaded yet is loaded). 200 with the model;
// 404 for an undeclared model; 500 when loading failed, the previous version still serving.
func (s *Server) reloadModel(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if _, ok := s.App.Registry.Declaration(name); !ok {
		writeError(w, http.StatusNotFound, "no model %q is declared: GET /api/models lists them", name)
		return
	}
	t0 := time.Now()
	var err error
	if e := s.App.Registry.Loaded(name); e != nil {
		err = e.Reload()
	} else {
		_, err = s.App.Registry.Get(name)
	}
	s.Metrics.ObserveReload(name, err)
	if err != nil {
		s.Log.Error("api: model reload failed", "model", name, "err", err)
		writeError(w, http.StatusInternalServerError, "reloading model %s failed: %v (the previous version keeps serving; fix the file and retry)", name, err)
		return
	}
	s.Log.Info("api: model reloaded", "model", name, "duration", time.Since(t0).Round(time.Millisecond))
	v, _ := s.modelView(name)
	writeJSON(w, http.StatusOK, v)
}
