package api

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
)

// Recording routes (docs/recording.md), per stream, for streams with record: true:
//
//	GET /api/streams/{id}/results?start=&end=&format=jsonl|mot   the per-frame results log
//	GET /api/streams/{id}/recordings?start=&end=                 recorded spans and segments
//	GET /api/streams/{id}/recordings/{name}                      one segment (range requests)
//	GET /api/streams/{id}/export.mp4?start=&end=                 the coded video of a range
//
// start and end are RFC 3339 times or Unix seconds.
func (s *Server) recordingRoutes(api func(string, http.HandlerFunc)) {
	api("/api/streams/{id}/results", methods{"GET": s.clustered(s.exports.bound(s.streamResults))}.serve)
	api("/api/streams/{id}/recordings", methods{"GET": s.clustered(s.listRecordings)}.serve)
	api("/api/streams/{id}/recordings/{name}", methods{"GET": s.clustered(s.recordingSegment)}.serve)
	api("/api/streams/{id}/export.mp4", methods{"GET": s.clustered(s.exports.bound(s.exportRecording))}.serve)
}

func init() {
	for _, p := range []string{"/api/streams/{id}/results", "/api/streams/{id}/recordings",
		"/api/streams/{id}/recordings/{name}", "/api/streams/{id}/export.mp4"} {
		routeAccess[p] = map[string]access{"GET": {ScopeViewer, pathID}}
	}
}

// Bounds of the ranges asked for.
const (
	maxResultsRange = 24 * time.Hour   // one results query
	defaultRange    = 10 * time.Minute // a range with no start: this much before its end
	gapJoin         = 2 * time.Second  // segments this close make one span
)

// recordings returns the app's recordings, answering 404 when nothing is recorded.
func (s *Server) recordings(w http.ResponseWriter) defs.Recordings {
	if p, ok := s.App.(interface{ Recordings() defs.Recordings }); ok {
		if rec := p.Recordings(); rec != nil {
			return rec
		}
	}
	writeError(w, http.StatusNotFound, "nothing is recorded: add a record section (dir, …) to the configuration and record: true to the stream")
	return nil
}

// rangeParams reads start and end (default: the last defaultRange up to now), at most max
// apart (0: no bound); it answers 400 and reports false for a bad one.
func rangeParams(w http.ResponseWriter, r *http.Request, max time.Duration) (from, to time.Time, ok bool) {
	q := r.URL.Query()
	to = time.Now()
	if v := q.Get("end"); v != "" {
		t, err := timeParam(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "end %q: %v", v, err)
			return from, to, false
		}
		to = t
	}
	from = to.Add(-defaultRange)
	if v := q.Get("start"); v != "" {
		t, err := timeParam(v)
		if err != nil {
			writeError(w, http.StatusBadRequest, "start %q: %v", v, err)
			return from, to, false
		}
		from = t
	}
	if !from.Before(to) {
		writeError(w, http.StatusBadRequest, "start must come before end")
		return from, to, false
	}
	if max > 0 && to.Sub(from) > max {
		writeError(w, http.StatusBadRequest, "the range may span at most %v", max)
		return from, to, false
	}
	return from, to, true
}

func (s *Server) recordingError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, defs.ErrNotRecorded), errors.Is(err, defs.ErrNoRecording):
		writeError(w, http.StatusNotFound, "%v", err)
	case errors.Is(err, defs.ErrRangeTooLong):
		writeError(w, http.StatusBadRequest, "%v", err)
	default:
		writeError(w, http.StatusInternalServerError, "recording: %v", err)
	}
}

func (s *Server) streamResults(w http.ResponseWriter, r *http.Request) {
	rec := s.recordings(w)
	if rec == nil {
		return
	}
	from, to, ok := rangeParams(w, r, maxResultsRange)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	switch format {
	case "", "jsonl":
		format = "jsonl"
		w.Header().Set("Content-Type", "application/jsonl")
	case "mot":
		w.Header().Set("Content-Type", "text/csv")
	default:
		writeError(w, http.StatusBadRequest, "format %q: jsonl or mot", format)
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Minute))
	cw := &committedWriter{w: w}
	if err := rec.ResultsExport(cw, r.PathValue("id"), from, to, format); err != nil && !cw.committed {
		w.Header().Del("Content-Type")
		s.recordingError(w, err)
	}
}

// span is a stretch of recorded video without gaps.
type span struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}

func (s *Server) listRecordings(w http.ResponseWriter, r *http.Request) {
	rec := s.recordings(w)
	if rec == nil {
		return
	}
	from, to, ok := rangeParams(w, r, 0)
	if !ok {
		return
	}
	id := r.PathValue("id")
	segs, err := rec.RecordingSegments(id, from, to)
	if err != nil {
		s.recordingError(w, err)
		return
	}
	spans := []span{}
	for i := range segs {
		segs[i].URL = "/api/streams/" + url.PathEscape(id) + "/recordings/" + segs[i].Name
		if n := len(spans); n > 0 && segs[i].Start.Sub(spans[n-1].End) <= gapJoin {
			spans[n-1].End = segs[i].End
			continue
		}
		spans = append(spans, span{segs[i].Start, segs[i].End})
	}
	if segs == nil {
		segs = []defs.RecordedSegment{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"stream": id, "start": from.UTC(), "end": to.UTC(), "spans": spans,
		"segments": segs, "export_url": "/api/streams/" + url.PathEscape(id) + "/export.mp4"})
}

// recordingSegment serves a segment with http.ServeContent (Range, If-Range): a video element
// seeks in it. The name is checked by the recorder (START-END.mp4, digits only).
func (s *Server) recordingSegment(w http.ResponseWriter, r *http.Request) {
	rec := s.recordings(w)
	if rec == nil {
		return
	}
	f, err := rec.RecordingFile(r.PathValue("id"), r.PathValue("name"))
	if err != nil {
		s.recordingError(w, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeError(w, http.StatusInternalServerError, "recording: %v", err)
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Minute))
	if h := r.Header.Get("Range"); h != "" && !rangesOK(h, st.Size()) {
		w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(st.Size(), 10))
		writeError(w, http.StatusRequestedRangeNotSatisfiable, "range: at most %d ranges, none overlapping", maxRanges)
		return
	}
	w.Header().Set("Content-Type", "video/mp4")
	if strings.HasSuffix(r.PathValue("name"), ".part") {
		w.Header().Set("Cache-Control", "no-cache") // the segment being written grows
	} else {
		w.Header().Set("Cache-Control", "private, max-age=3600")
	}
	http.ServeContent(w, r, "", st.ModTime(), f)
}

func (s *Server) exportRecording(w http.ResponseWriter, r *http.Request) {
	rec := s.recordings(w)
	if rec == nil {
		return
	}
	from, to, ok := rangeParams(w, r, 0)
	if !ok {
		return
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(10 * time.Minute))
	w.Header().Set("Content-Type", "video/mp4")
	w.Header().Set("Content-Disposition", `attachment; filename="recording.mp4"`)
	cw := &committedWriter{w: w}
	if err := rec.RecordingExport(cw, r.PathValue("id"), from, to); err != nil && !cw.committed {
		w.Header().Del("Content-Type")
		w.Header().Del("Content-Disposition")
		s.recordingError(w, err)
	}
}

// committedWriter notes whether anything was written (then an error can no longer change the
// status: the answer is cut short instead).
type committedWriter struct {
	w         http.ResponseWriter
	committed bool
}

// SetSize sets the answer's Content-Length before its first write (record.Sizer): a client
// can tell an export cut short.
func (c *committedWriter) SetSize(n int64) {
	if !c.committed {
		c.w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	}
}

func (c *committedWriter) Write(p []byte) (int, error) {
	c.committed = true
	return c.w.Write(p)
}
