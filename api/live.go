package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/vinfer/vinfer/internal/defs"
)

// Live view signalling, WHEP-like (draft-ietf-wish-whep): POST an SDP offer, get the answer.
//
//	POST   /api/streams/{id}/whep             Content-Type: application/sdp, the offer; 201 with
//	                                          the answer (application/sdp) and Location of the session
//	DELETE /api/streams/{id}/whep/{session}   end the session
//
// Errors: 404 stream not running or no such session, 503 max_viewers reached, 415 the offer
// has no codec the stream is in (the page falls back to snapshots), 400 a bad offer.

// offerTimeout bounds answering one offer (candidates are gathered before the answer).
const offerTimeout = 10 * time.Second

func (s *Server) liveRoutes(api func(string, http.HandlerFunc)) {
	api("/api/streams/{id}/whep", methods{"POST": s.clustered(s.whepOffer)}.serve)
	api("/api/streams/{id}/whep/{session}", methods{"DELETE": s.clustered(s.whepClose)}.serve)
	api("/api/streams/{id}/mse", methods{"GET": s.clustered(s.liveFMP4)}.serve)
}

// liveWriteTimeout bounds writing one message to a fragmented MP4 viewer; a viewer that takes
// longer is gone (its queue of access units would have dropped it anyway).
const liveWriteTimeout = 5 * time.Second

// liveFMP4 serves GET /api/streams/{id}/mse: a WebSocket of fragmented MP4 (binary messages)
// and the stream's results (text), for Media Source Extensions (defs.LiveRun).
func (s *Server) liveFMP4(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.Live == nil {
		writeError(w, http.StatusNotFound, "live view is off on this server")
		return
	}
	run, err := s.Live.LiveFMP4(id)
	if err != nil {
		writeError(w, liveStatus(err), "live view of stream %q: %v", id, err)
		return
	}
	streamDeadlines(w)
	// The guard checked the Origin, as for /api/ws.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled,
		InsecureSkipVerify: true})
	if err != nil {
		done, cancel := context.WithCancel(r.Context())
		cancel()
		_ = run(done, nil) // gives the place back
		return
	}
	defer c.CloseNow()
	ctx := c.CloseRead(r.Context())
	err = run(ctx, func(text bool, msg []byte) error {
		typ := websocket.MessageBinary
		if text {
			typ = websocket.MessageText
		}
		wctx, done := context.WithTimeout(ctx, liveWriteTimeout)
		defer done()
		return c.Write(wctx, typ, msg)
	})
	s.Log.Debug("api: live fMP4 viewer gone", "stream", id, "why", err)
	c.Close(websocket.StatusNormalClosure, "")
}

func (s *Server) whepOffer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if s.Live == nil {
		writeError(w, http.StatusNotFound, "live view is off on this server")
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the offer: %v", err)
		return
	}
	if len(body) > maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, "the offer is over %d bytes", maxBody)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), offerTimeout)
	defer cancel()
	answer, session, err := s.Live.LiveOffer(ctx, id, string(body), r.URL.Query().Get("reorder") == "1")
	if err != nil {
		writeError(w, liveStatus(err), "live view of stream %q: %v", id, err)
		return
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Location", fmt.Sprintf("/api/streams/%s/whep/%s", id, session))
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, answer)
}

func (s *Server) whepClose(w http.ResponseWriter, r *http.Request) {
	if s.Live == nil {
		writeError(w, http.StatusNotFound, "live view is off on this server")
		return
	}
	if err := s.Live.LiveClose(r.PathValue("id"), r.PathValue("session")); err != nil {
		writeError(w, liveStatus(err), "%v", err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// liveStatus maps a defs.Live error to its HTTP status.
func liveStatus(err error) int {
	switch {
	case errors.Is(err, defs.ErrLiveNotRunning), errors.Is(err, defs.ErrLiveSession):
		return http.StatusNotFound
	case errors.Is(err, defs.ErrLiveFull):
		return http.StatusServiceUnavailable
	case errors.Is(err, defs.ErrLiveCodec):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, defs.ErrLiveOffer):
		return http.StatusBadRequest
	case errors.Is(err, defs.ErrLiveReorder):
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}
