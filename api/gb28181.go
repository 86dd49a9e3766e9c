package api

import (
	"net/http"

	"github.com/vinfer/vinfer/internal/defs"
)

// gbDevices serves GET /api/gb28181/devices: the GB28181 platform's devices with their
// channels, status and sessions, and its counters; 404 when no platform runs.
func (s *Server) gbDevices(w http.ResponseWriter, r *http.Request) {
	g, ok := s.App.(defs.GB28181)
	var info defs.GB28181Info
	if ok {
		info, ok = g.GB28181()
	}
	if !ok {
		writeError(w, http.StatusNotFound, "no GB28181 platform: add a gb28181: section to the configuration")
		return
	}
	writeJSON(w, http.StatusOK, info)
}
