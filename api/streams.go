package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/enum"
	"github.com/vinfer/vinfer/internal/redact"
	"github.com/vinfer/vinfer/source"
	"github.com/vinfer/vinfer/source/live"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/metrics"
)

// StreamView is a stream as the API reports it: its declaration (the body of POST
// /api/streams, config.Stream, with the source's credentials redacted), its state, counters and
// rates.
type StreamView struct {
	config.Stream
	Live bool `json:"live"`
	// State is starting (no access unit read yet), running, degraded (running, but inference
	// drops too many of its frames: Overload), ended (a file finished) or failed.
	State defs.StreamState `json:"state"`
	// Error is why a failed stream stopped, or why its source could not be opened.
	Error string `json:"error,omitempty"`
	// Retry is set while a configured stream's source cannot be opened: it is tried again.
	Retry *RetryView `json:"retry,omitempty"`
	// Overload is the share of the stream's frames dropped by inference being behind.
	Overload *OverloadView `json:"overload,omitempty"`
	Started  time.Time     `json:"started"`
	// UptimeSeconds is the time since the stream was added.
	UptimeSeconds float64 `json:"uptime_seconds"`

	// Counters since the stream was added.
	AccessUnits int64            `json:"access_units"`
	Decoded     int64            `json:"decoded"`
	Inferred    int64            `json:"inferred"`
	Detections  int64            `json:"detections"`
	Dropped     map[string]int64 `json:"dropped"`
	Classes     map[string]int64 `json:"classes"`
	// Queue is the frames waiting for inference now.
	Queue int `json:"queue"`

	// Rates over the last few seconds (metrics.Rates).
	DecodedFPS  float64 `json:"decoded_fps"`
	InferredFPS float64 `json:"inferred_fps"`
	DroppedFPS  float64 `json:"dropped_fps"`
	// LatencyMS is the mean time from decoder to result, in milliseconds.
	LatencyMS float64 `json:"latency_ms"`

	// Last is the newest result: its frame index, size and detections.
	Last *event `json:"last,omitempty"`
	// SourceStats are a live source's counters (packets, loss, reconnects).
	SourceStats *live.Stats `json:"source_stats,omitempty"`
	// ActivityState is the stream's activity gate (docs/activity.md); absent when off.
	ActivityState *ActivityView `json:"activity_state,omitempty"`
}

// RetryView is a failed stream's retry schedule (sources.retry).
type RetryView struct {
	// Attempts counts the failed attempts to open the source so far.
	Attempts int `json:"attempts"`
	// NextAttempt is when the next one starts; absent once the server is stopping.
	NextAttempt *time.Time `json:"next_attempt,omitempty"`
	// Backoff: the first retry after InitialSeconds, the delay doubling up to MaxSeconds.
	InitialSeconds float64 `json:"initial_seconds"`
	MaxSeconds     float64 `json:"max_seconds"`
}

// OverloadView is a running stream's drops over the degraded window (sources.degraded).
type OverloadView struct {
	// DropRatio is the share of the frames meant for inference (decoded, less those skipped by
	// interval or max_fps) dropped because inference was behind, over the last WindowSeconds.
	DropRatio     float64 `json:"drop_ratio"`
	WindowSeconds float64 `json:"window_seconds"`
	// DegradedCount counts the times the stream went degraded; DegradedSeconds sums how long.
	DegradedCount   int     `json:"degraded_count"`
	DegradedSeconds float64 `json:"degraded_seconds"`
}

func (s *Server) streamExists(id string) bool {
	_, ok := s.App.Stream(id)
	return ok
}

// streamView describes one stream from its snapshot and its rates.
func (s *Server) streamView(st defs.StreamInfo, rate metrics.StreamRate) StreamView {
	v := StreamView{Stream: st.Decl, Live: st.Live, Started: st.Started, State: st.State(),
		UptimeSeconds: time.Since(st.Started).Seconds(), Queue: st.Queue,
		Dropped: map[string]int64{}, Classes: st.Classes, SourceStats: st.Source}
	v.Source = redact.Source(st.Decl.Source)
	c := &st.Counters
	v.AccessUnits, v.Decoded, v.Inferred, v.Detections = c.AccessUnits, c.Decoded, c.Inferred, c.Detections
	for _, r := range defs.DropReasons() {
		v.Dropped[r.String()] = c.Dropped[r]
	}
	if st.Err != nil {
		v.Error = redact.Message(st.Err.Error(), st.Decl.Source)
	}
	if r := st.Retry; r != nil {
		v.Retry = &RetryView{Attempts: r.Attempts, InitialSeconds: r.Initial.Seconds(), MaxSeconds: r.Max.Seconds()}
		if !r.Next.IsZero() {
			next := r.Next.UTC()
			v.Retry.NextAttempt = &next
		}
	}
	if o := st.Overload; o != nil {
		v.Overload = &OverloadView{DropRatio: round2(o.Ratio), WindowSeconds: o.Window.Seconds(),
			DegradedCount: o.Changes, DegradedSeconds: round2(o.DegradedFor.Seconds())}
	}
	v.DecodedFPS, v.InferredFPS, v.DroppedFPS = round2(rate.DecodedFPS), round2(rate.InferredFPS), round2(rate.DroppedFPS)
	v.LatencyMS = round2(float64(rate.Latency) / float64(time.Millisecond))
	v.ActivityState = activityView(st.Activity)
	if ev, ok := s.tracker.latest(st.Decl.ID); ok {
		v.Last = &ev
	}
	return v
}

func (s *Server) rawSource(id string) string {
	st, _ := s.App.Stream(id)
	return st.Decl.Source
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// listStreams answers GET /api/streams: {"streams": [StreamView...]} in the order added; on a
// cluster node, the whole cluster's (clusterStreams), unless ?scope=local asks for this node's.
func (s *Server) listStreams(w http.ResponseWriter, r *http.Request) {
	scope := r.URL.Query().Get("scope")
	if scope != "" && scope != "local" && scope != "cluster" {
		writeError(w, http.StatusBadRequest, "scope %q: use local (this node's streams) or cluster (every node's, the default)", scope)
		return
	}
	rates := s.Metrics.Rates().Streams()
	out := []StreamView{}
	limited := tokenLimited(r) // sees its streams only, this node's
	for _, st := range s.App.Streams() {
		if !tokenAllows(r, st.Decl.ID) {
			continue
		}
		out = append(out, s.streamView(st, rates[st.Decl.ID]))
	}
	if s.Cluster != nil && scope != "local" && r.Header.Get(forwardedHeader) == "" && !limited {
		s.clusterStreams(w, r, out)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"streams": out})
}

// getStream answers GET /api/streams/{id}.
func (s *Server) getStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, ok := s.App.Stream(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", id)
		return
	}
	rate, _ := s.Metrics.Rates().Stream(id)
	writeJSON(w, http.StatusOK, s.streamView(st, rate))
}

// addStream answers POST /api/streams: 201 with the new stream; 400 for a malformed or
// incomplete request, 409 for an id in use, 422 for zones or lines that do not validate and
// when the source or model cannot be opened.
func (s *Server) addStream(w http.ResponseWriter, r *http.Request) {
	var c config.Stream
	if code, err := decodeJSON(w, r, &c); err != nil {
		writeError(w, code, "%s", redact.Message(err.Error(), c.Source))
		return
	}
	c.ID, c.Source, c.Model = strings.TrimSpace(c.ID), strings.TrimSpace(c.Source), strings.TrimSpace(c.Model)
	models := s.App.Models()
	if c.Model == "" && len(models) == 1 {
		c.Model = models[0].Decl.Name
	}
	if err := c.Validate(); err != nil {
		writeError(w, declStatus(c), "stream declaration: %s", strings.ReplaceAll(redact.Message(err.Error(), c.Source), "\n", "; "))
		return
	}
	if !tokenAllows(r, c.ID) {
		writeError(w, http.StatusForbidden, "this token may not add stream %q: it is limited to other stream ids", c.ID)
		return
	}
	if _, ok := s.App.Model(c.Model); !ok {
		names := make([]string, len(models))
		for i, m := range models {
			names[i] = m.Decl.Name
		}
		writeError(w, http.StatusBadRequest, "model %q is not declared: use one of %s (GET /api/models)", c.Model, strings.Join(names, ", "))
		return
	}
	if s.inCluster() {
		s.clusterAdd(w, r, c)
		return
	}
	if s.streamExists(c.ID) {
		writeError(w, http.StatusConflict, "stream %q already exists: DELETE /api/streams/%s first, or choose another id", c.ID, c.ID)
		return
	}
	if err := s.App.AddRemoteStream(c); err != nil {
		if errors.Is(err, defs.ErrStreamExists) { // another add of the same id won the race
			writeError(w, http.StatusConflict, "stream %q already exists: DELETE /api/streams/%s first, or choose another id", c.ID, c.ID)
			return
		}
		msg := redact.Message(err.Error(), c.Source)
		s.Log.Warn("api: add stream failed", "stream", c.ID, "source", redact.Source(c.Source), "err", msg)
		code := addStatus(err)
		if code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		writeError(w, code, "%s", msg)
		return
	}
	s.tracker.forget(c.ID)
	s.Log.Info("api: stream added", "stream", c.ID, "source", redact.Source(c.Source), "model", c.Model)
	st, _ := s.App.Stream(c.ID)
	w.Header().Set("Location", "/api/streams/"+c.ID)
	writeJSON(w, http.StatusCreated, s.streamView(st, metrics.StreamRate{}))
}

// declStatus is the status code for a stream declaration that parsed but did not validate:
// 422 when only its zones and lines are wrong, as PUT /api/streams/{id}/scene answers for the
// same declarations; 400 when the rest of it is wrong (or incomplete).
func declStatus(c config.Stream) int {
	bare := c
	bare.Zones, bare.Lines = nil, nil
	if bare.Validate() == nil {
		return http.StatusUnprocessableEntity
	}
	return http.StatusBadRequest
}

// addStatus is the status code for a failed add: 403 for a file outside the allowed
// directories, 400 for a path that cannot name a file, 503 when the server is busy or full,
// 422 when the source could not be opened.
func addStatus(err error) int {
	switch {
	case errors.Is(err, source.ErrNotAllowed):
		return http.StatusForbidden
	case errors.Is(err, source.ErrNameTooLong):
		return http.StatusBadRequest
	case errors.Is(err, defs.ErrBusy), errors.Is(err, defs.ErrStreamLimit):
		return http.StatusServiceUnavailable
	}
	return http.StatusUnprocessableEntity
}

// deleteStream answers DELETE /api/streams/{id}: 204 once the stream is stopped and released.
func (s *Server) deleteStream(w http.ResponseWriter, r *http.Request) {
	if s.inCluster() {
		s.clusterDelete(w, r)
		return
	}
	id := r.PathValue("id")
	if !s.streamExists(id) {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", id)
		return
	}
	if err := s.App.RemoveStream(id); err != nil {
		writeError(w, http.StatusNotFound, "%s", redact.Message(err.Error(), s.rawSource(id)))
		return
	}
	s.tracker.forget(id)
	s.Log.Info("api: stream removed", "stream", id)
	w.WriteHeader(http.StatusNoContent)
}

// decodeJSON reads one JSON object into v, rejecting unknown fields, trailing data and bodies
// over maxBody; the error says what is wrong and where, with the status code to answer.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) (int, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("data after the JSON object: send one object")
		}
	}
	if err == nil {
		// The body is read: the handler's own work (opening a source) is not bound by
		// BodyTimeout.
		_ = http.NewResponseController(w).SetReadDeadline(time.Time{})
	} else {
		// The rest of the body is not wanted: close the connection after the answer instead of
		// reading (draining) it first, which a client that stopped sending would hold for
		// ever. The read deadline stays, so nothing else can wait on the body either.
		w.Header().Set("Connection", "close")
	}
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return http.StatusRequestTimeout, errors.New("the body did not arrive in time")
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var big *http.MaxBytesError
	switch {
	case err == nil:
		return 0, nil
	case errors.Is(err, io.EOF):
		return http.StatusBadRequest, errors.New("empty body: send a JSON object such as {\"id\":\"cam1\",\"source\":\"rtsp://host/path\",\"model\":\"yolox\"}")
	case errors.As(err, &syn):
		return http.StatusBadRequest, fmt.Errorf("malformed JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		return http.StatusBadRequest, fmt.Errorf("field %q must be a JSON %s, not %s", typ.Field, typ.Type, typ.Value)
	case errors.Is(err, enum.ErrUnknown):
		return http.StatusBadRequest, err
	case errors.As(err, &big):
		return http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", big.Limit)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return http.StatusBadRequest, fmt.Errorf("%s: the fields are %s", strings.TrimPrefix(err.Error(), "json: "), strings.Join(jsonFields(v), ", "))
	}
	return http.StatusBadRequest, fmt.Errorf("bad JSON body: %v", err)
}

// jsonFields lists the JSON field names of the struct v points to (embedded structs flattened).
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	if t.Kind() != reflect.Struct {
		return out
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case f.Anonymous && name == "":
			out = append(out, jsonFields(reflect.New(f.Type).Interface())...)
		case name != "" && name != "-":
			out = append(out, name)
		}
	}
	return out
}
