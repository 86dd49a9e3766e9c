package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/vinfer/vinfer/analytics"
)

// SceneView is a stream's zones and lines with their live figures.
type SceneView struct {
	analytics.Config
	// Counts are the occupancy and event counters per zone or line and class.
	Counts *analytics.Metrics `json:"counts,omitempty"`
}

// getScene answers GET /api/streams/{id}/scene.
func (s *Server) getScene(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, ok := s.App.Stream(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", id)
		return
	}
	writeJSON(w, http.StatusOK, SceneView{Config: st.Decl.Config, Counts: st.Scene})
}

// putScene answers PUT /api/streams/{id}/scene: 200 with the new scene; 400 for a malformed
// body, 404 for an unknown stream, 422 for zones or lines that do not validate (the stream keeps
// its previous ones).
func (s *Server) putScene(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.streamExists(id) {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", id)
		return
	}
	var c analytics.Config
	if code, err := decodeJSON(w, r, &c); err != nil {
		writeError(w, code, "%v", err)
		return
	}
	if err := s.App.SetScene(id, c); err != nil {
		code := http.StatusUnprocessableEntity
		if errors.Is(err, errNoStream) {
			code = http.StatusNotFound
		}
		writeError(w, code, "%s", strings.ReplaceAll(err.Error(), "\n", "; "))
		return
	}
	s.Log.Info("api: scene changed", "stream", id, "zones", len(c.Zones), "lines", len(c.Lines))
	st, _ := s.App.Stream(id)
	writeJSON(w, http.StatusOK, SceneView{Config: st.Decl.Config, Counts: st.Scene})
}

var errNoStream = errors.New("no stream")
