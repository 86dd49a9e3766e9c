package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
)

// onvifTimeout bounds a discovery or a profile request.
const onvifTimeout = 20 * time.Second

func (s *Server) cameras(w http.ResponseWriter) (defs.Cameras, bool) {
	c, ok := s.App.(defs.Cameras)
	if !ok {
		writeError(w, http.StatusNotFound, "no ONVIF discovery in this server")
	}
	return c, ok
}

// listCameras serves GET /api/onvif/cameras: the last discovery's cameras.
func (s *Server) listCameras(w http.ResponseWriter, r *http.Request) {
	if c, ok := s.cameras(w); ok {
		writeJSON(w, http.StatusOK, map[string]any{"cameras": orEmpty(c.Cameras())})
	}
}

// discoverCameras serves POST /api/onvif/discover {"target":"ip:port"} (optional; default
// the local segment): probes for ONVIF cameras for 3 s and answers them. Nothing is added.
func (s *Server) discoverCameras(w http.ResponseWriter, r *http.Request) {
	c, ok := s.cameras(w)
	if !ok {
		return
	}
	var req struct {
		Target string `json:"target"`
	}
	if err := decodeSmall(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), onvifTimeout)
	defer cancel()
	list, err := c.DiscoverCameras(ctx, req.Target)
	switch {
	case errors.Is(err, defs.ErrCameraTarget):
		writeError(w, http.StatusBadRequest, "%v", err)
	case err != nil:
		writeError(w, http.StatusBadGateway, "%v", err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"cameras": orEmpty(list)})
	}
}

// cameraProfiles serves POST /api/onvif/cameras/{id}/profiles {"user","password"}: the
// camera's profiles, each with its onvif:// source (the user, not the password).
func (s *Server) cameraProfiles(w http.ResponseWriter, r *http.Request) {
	c, ok := s.cameras(w)
	if !ok {
		return
	}
	var req struct {
		User     string `json:"user"`
		Password string `json:"password"`
	}
	if err := decodeSmall(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "%v", err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), onvifTimeout)
	defer cancel()
	ps, err := c.CameraProfiles(ctx, r.PathValue("id"), req.User, req.Password)
	switch {
	case errors.Is(err, defs.ErrNoCamera):
		writeError(w, http.StatusNotFound, "%v", err)
	case errors.Is(err, defs.ErrCameraAuth):
		writeError(w, http.StatusForbidden, "%v", err)
	case err != nil:
		writeError(w, http.StatusBadGateway, "%v", err)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"profiles": orEmpty(ps)})
	}
}

// decodeSmall decodes an optional JSON body of at most 4 KiB into v.
func decodeSmall(r *http.Request, v any) error {
	b, err := io.ReadAll(io.LimitReader(r.Body, 4<<10+1))
	if err != nil {
		return err
	}
	if len(b) > 4<<10 {
		return errors.New("body over 4 KiB")
	}
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return errors.New("body: not the expected JSON object")
	}
	return nil
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
