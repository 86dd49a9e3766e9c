package api

import (
	"net/http"

	"github.com/vinfer/vinfer/internal/defs"
)

// gbUpstreams serves GET /api/gb28181/upstream: the upper platforms vinfer cascades to, each
// with its registration state, live views and counters (never its password); 404 without
// gb28181.upstream entries.
func (s *Server) gbUpstreams(w http.ResponseWriter, r *http.Request) {
	g, ok := s.App.(defs.GB28181Upstreams)
	var ups []defs.GB28181Upstream
	if ok {
		ups = g.GB28181Upstreams()
	}
	if len(ups) == 0 {
		writeError(w, http.StatusNotFound, "no GB28181 upper platform: add gb28181.upstream entries to the configuration")
		return
	}
	writeJSON(w, http.StatusOK, ups)
}
