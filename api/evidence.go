package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
)

// Evidence routes (docs/evidence.md). /api/events is the live SSE stream, so the recorded
// events live under /api/evidence:
//
//	GET /api/evidence?stream=&type=&since=&until=&limit=&cursor=   recorded events, newest first, paged
//	GET /api/evidence/{id}                                  one event with its clip's state
//	GET /api/evidence/{id}/clip.mp4                         the clip (range requests: seekable)
//	GET /api/evidence/{id}/snapshot.jpg                     the track's best frame (?boxes=1: box drawn)
//	GET /api/evidence/{id}/frame.jpg                        the event's own frame (?boxes=1)
//
// and the same as GET /api/events?…&limit= (or Accept: application/json) and /api/events/{id}….
func (s *Server) evidenceRoutes(mux *http.ServeMux, api func(string, http.HandlerFunc)) {
	api("/api/evidence", methods{"GET": s.listEvidence}.serve)
	api("/api/evidence/{id}", methods{"GET": s.evidenceHeld(s.getEvidence)}.serve)
	api("/api/evidence/{id}/clip.mp4", methods{"GET": s.evidenceHeld(s.evidenceClip)}.serve)
	api("/api/evidence/{id}/snapshot.jpg", methods{"GET": s.evidenceHeld(s.evidenceSnapshot)}.serve)
	api("/api/evidence/{id}/frame.jpg", methods{"GET": s.evidenceHeld(s.evidenceFrame)}.serve)
	// The same under /api/events, whose list shares its path with the live stream (recordedOr).
	api("/api/events/{id}", methods{"GET": s.evidenceHeld(s.getEvidence)}.serve)
	api("/api/events/{id}/clip.mp4", methods{"GET": s.evidenceHeld(s.evidenceClip)}.serve)
	api("/api/events/{id}/snapshot.jpg", methods{"GET": s.evidenceHeld(s.evidenceSnapshot)}.serve)
	api("/api/events/{id}/frame.jpg", methods{"GET": s.evidenceHeld(s.evidenceFrame)}.serve)
}

// recordedOr serves GET /api/events as the recorded events' list (as GET /api/evidence) when
// the query pages (limit, since, until or cursor) or the client asks for JSON and not for an event
// stream; otherwise as live, the Server-Sent Events stream (EventSource sends Accept:
// text/event-stream and none of those parameters).
func (s *Server) recordedOr(live http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		accept := r.Header.Get("Accept")
		if q.Has("limit") || q.Has("since") || q.Has("until") || q.Has("cursor") ||
			(strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/event-stream")) {
			s.listEvidence(w, r)
			return
		}
		live(w, r)
	}
}

// evidenceOff answers when no evidence is recorded; it reports whether it did.
func (s *Server) evidenceOff(w http.ResponseWriter) bool {
	if s.Evidence != nil {
		return false
	}
	writeError(w, http.StatusNotFound, "evidence is not recorded: add an evidence section (dir, pre, post, …) to the configuration")
	return true
}

// since and until bounds in Unix seconds: 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z (beyond them
// time.Unix overflows or the RFC 3339 form breaks).
const (
	minSinceUnix = -62167219200
	maxSinceUnix = 253402300799
)

// timeParam parses a list bound: an RFC 3339 time or Unix seconds, in years 0000..9999.
func timeParam(v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		sec, err2 := strconv.ParseInt(v, 10, 64)
		if err2 != nil {
			return t, errors.New("give an RFC 3339 time (2026-03-01T12:00:00Z) or Unix seconds")
		}
		if sec < minSinceUnix || sec > maxSinceUnix {
			return t, errors.New("Unix seconds must lie in years 0000..9999")
		}
		t = time.Unix(sec, 0)
	}
	if t.Year() < 0 || t.Year() > 9999 {
		return t, errors.New("the time must lie in years 0000..9999")
	}
	return t, nil
}

func (s *Server) listEvidence(w http.ResponseWriter, r *http.Request) {
	merge := s.Cluster != nil && r.Header.Get(forwardedHeader) == ""
	if !merge && s.evidenceOff(w) {
		return
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), 100, 1, 1000)
	if err != nil {
		writeError(w, http.StatusBadRequest, "limit: %v", err)
		return
	}
	eq := defs.EvidenceQuery{Stream: q.Get("stream"), Type: q.Get("type"), Cursor: q.Get("cursor"), Limit: limit}
	for _, p := range []struct {
		name string
		t    *time.Time
	}{{"since", &eq.Since}, {"until", &eq.Until}} {
		if v := q.Get(p.name); v != "" {
			if *p.t, err = timeParam(v); err != nil {
				writeError(w, http.StatusBadRequest, "%s %q: %v", p.name, v, err)
				return
			}
		}
	}
	if eq.Cursor != "" && strings.Trim(eq.Cursor, "0") == "" {
		writeError(w, http.StatusBadRequest, "cursor %q: the zero event id is no cursor (omit it for the first page)", eq.Cursor)
		return
	}
	var items []defs.EvidenceItem
	var next string
	if s.Evidence != nil {
		if items, next, err = s.Evidence.EvidenceList(eq); err != nil {
			s.evidenceError(w, err)
			return
		}
	}
	for i := range items {
		s.evidenceURLs(&items[i])
	}
	if merge { // api/evidence_cluster.go
		local := make([]map[string]json.RawMessage, 0, len(items))
		for _, it := range items {
			b, _ := json.Marshal(it)
			var m map[string]json.RawMessage
			if json.Unmarshal(b, &m) == nil {
				local = append(local, m)
			}
		}
		q.Set("limit", strconv.Itoa(limit))
		s.clusterEvidence(w, r, q, limit, local, next)
		return
	}
	out := map[string]any{"items": items, "next": next}
	if next != "" {
		q.Set("cursor", next)
		out["next_url"] = (&url.URL{Path: r.URL.Path, RawQuery: q.Encode()}).String()
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) evidenceURLs(it *defs.EvidenceItem) {
	base := "/api/evidence/" + it.ID
	if it.HasClip {
		it.ClipURL = base + "/clip.mp4"
	}
	if it.HasSnapshot {
		it.SnapshotURL = base + "/snapshot.jpg"
	}
	if it.HasFrame {
		it.FrameURL = base + "/frame.jpg"
	}
}

func (s *Server) getEvidence(w http.ResponseWriter, r *http.Request) {
	if s.evidenceOff(w) {
		return
	}
	it, err := s.Evidence.EvidenceItem(r.PathValue("id"))
	if err != nil {
		s.evidenceError(w, err)
		return
	}
	s.evidenceURLs(&it)
	writeJSON(w, http.StatusOK, it)
}

func (s *Server) evidenceClip(w http.ResponseWriter, r *http.Request) {
	s.serveEvidence(w, r, defs.EvidenceClipFile, "video/mp4")
}

func (s *Server) evidenceSnapshot(w http.ResponseWriter, r *http.Request) {
	kind := defs.EvidenceSnapshot
	if boxesParam(r) {
		kind = defs.EvidenceSnapshotBoxed
	}
	s.serveEvidence(w, r, kind, "image/jpeg")
}

func (s *Server) evidenceFrame(w http.ResponseWriter, r *http.Request) {
	kind := defs.EvidenceFrame
	if boxesParam(r) {
		kind = defs.EvidenceFrameBoxed
	}
	s.serveEvidence(w, r, kind, "image/jpeg")
}

// boxesParam reports ?boxes=1 (or true): the snapshot with the object's box drawn.
func boxesParam(r *http.Request) bool {
	b := r.URL.Query().Get("boxes")
	return b == "1" || b == "true"
}

// serveEvidence serves a file with http.ServeContent: Range, If-Range and If-Modified-Since,
// so a browser's video element can seek. More than maxRanges ranges, or overlapping ones, get
// 416 (rangesOK).
func (s *Server) serveEvidence(w http.ResponseWriter, r *http.Request, kind defs.EvidenceFileKind, ctype string) {
	if s.evidenceOff(w) {
		return
	}
	id := r.PathValue("id")
	f, err := s.Evidence.EvidenceFile(id, kind)
	if err != nil {
		s.evidenceError(w, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "evidence %s: %v", id, err)
		return
	}
	// A long clip over a slow link may take longer than the API's write timeout.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Minute))
	if h := r.Header.Get("Range"); h != "" && !rangesOK(h, st.Size()) {
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(st.Size(), 10))
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "range: at most %d ranges, none overlapping", maxRanges)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Header().Set("Cache-Control", "private, max-age=3600")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

func (s *Server) evidenceError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, defs.ErrBadEvidenceID):
		writeError(w, http.StatusBadRequest, "%v", err)
	case errors.Is(err, defs.ErrEvidenceNotFound):
		writeError(w, http.StatusNotFound, "%v: GET /api/evidence lists them", err)
	case errors.Is(err, defs.ErrEvidenceGone):
		writeError(w, http.StatusNotFound, "%v", err)
	default:
		writeError(w, http.StatusInternalServerError, "evidence: %v", err)
	}
}
