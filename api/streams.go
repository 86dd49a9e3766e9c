package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/metrics"
	"github.com/vinfer/vinfer/pipeline"
)

// StreamRequest is the body of POST /api/streams (the fields of a config.Stream).
type StreamRequest struct {
	// ID names the stream in URLs, events and metrics: 1–64 letters, digits, '.', '_' or '-'.
	ID string `json:"id"`
	// Source is a file path, rtsp://…, rtp://host:port?codec=h264|h265 or gb28181://….
	Source string `json:"source"`
	// Model is a declared model's name; may be omitted when exactly one model is declared.
	Model string `json:"model"`
	// Loop restarts a file at its end.
	Loop bool `json:"loop,omitempty"`
	// Interval infers every Nth decoded frame (0 or 1: every frame).
	Interval int `json:"interval,omitempty"`
	// MaxFPS caps inferred frames per second (0: no cap).
	MaxFPS float64 `json:"max_fps,omitempty"`
	// Drop is the policy when inference falls behind: "oldest" or "block".
	Drop string `json:"drop,omitempty"`
	// Transport for RTSP: tcp, udp or auto.
	Transport string `json:"transport,omitempty"`
}

// StreamView is a stream as the API reports it.
type StreamView struct {
	ID string `json:"id"`
	// Source is the source with credentials redacted.
	Source string `json:"source"`
	Model  string `json:"model"`
	Live   bool   `json:"live"`
	// State is starting (no access unit read yet), running, ended (a file finished) or failed.
	State string `json:"state"`
	// Error is why a failed stream stopped.
	Error   string    `json:"error,omitempty"`
	Started time.Time `json:"started"`
	// UptimeSeconds is the time since the stream was added.
	UptimeSeconds float64 `json:"uptime_seconds"`

	Loop      bool    `json:"loop,omitempty"`
	Interval  int     `json:"interval,omitempty"`
	MaxFPS    float64 `json:"max_fps,omitempty"`
	Drop      string  `json:"drop,omitempty"`
	Transport string  `json:"transport,omitempty"`

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
	SourceStats any `json:"source_stats,omitempty"`
}

var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func (s *Server) streamExists(id string) bool {
	_, ok := s.App.Pipeline.Stream(id)
	return ok
}

// streamView describes one stream from its pipeline status, its declaration and its rates.
func (s *Server) streamView(st pipeline.StreamStatus, rate metrics.StreamRate) StreamView {
	v := StreamView{ID: st.ID, Model: st.Model, Live: st.Live, Started: st.Started,
		UptimeSeconds: time.Since(st.Started).Seconds(), Queue: st.Queue,
		Dropped: map[string]int64{}}
	if c, ok := s.App.StreamConfig(st.ID); ok {
		v.Source = redactSource(c.Source)
		v.Loop, v.Interval, v.MaxFPS, v.Drop, v.Transport = c.Loop, c.Interval, c.MaxFPS, c.Drop, c.Transport
	}
	stats := st.Stats
	v.AccessUnits, v.Decoded, v.Inferred = stats.AccessUnits.Load(), stats.Decoded.Load(), stats.Inferred.Load()
	v.Detections = stats.Detections.Load()
	for _, r := range pipeline.DropReasons() {
		v.Dropped[r.String()] = stats.Dropped[r].Load()
	}
	v.Classes = stats.PerClass()
	switch {
	case st.Err != nil:
		v.State, v.Error = "failed", scrubMessage(st.Err.Error(), s.rawSource(st.ID))
	case st.Ended:
		v.State = "ended"
	case v.AccessUnits == 0:
		v.State = "starting"
	default:
		v.State = "running"
	}
	v.DecodedFPS, v.InferredFPS, v.DroppedFPS = round2(rate.DecodedFPS), round2(rate.InferredFPS), round2(rate.DroppedFPS)
	v.LatencyMS = round2(float64(rate.Latency) / float64(time.Millisecond))
	if ev, ok := s.tracker.latest(st.ID); ok {
		v.Last = &ev
	}
	if ls, ok := st.Source.(metrics.LiveSource); ok {
		v.SourceStats = ls.Stats()
	}
	return v
}

func (s *Server) rawSource(id string) string {
	c, _ := s.App.StreamConfig(id)
	return c.Source
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }

// listStreams answers GET /api/streams: {"streams": [StreamView...]} in the order added.
func (s *Server) listStreams(w http.ResponseWriter, r *http.Request) {
	rates := s.Metrics.Rates().Streams(s.App)
	out := []StreamView{}
	for _, st := range s.App.Pipeline.Streams() {
		out = append(out, s.streamView(st, rates[st.ID]))
	}
	writeJSON(w, http.StatusOK, map[string]any{"streams": out})
}

// getStream answers GET /api/streams/{id}.
func (s *Server) getStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, ok := s.App.Pipeline.Stream(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", id)
		return
	}
	rate, _ := s.Metrics.Rates().Stream(s.App, id)
	writeJSON(w, http.StatusOK, s.streamView(st, rate))
}

// addStream answers POST /api/streams: 201 with the new stream; 400 for a malformed or
// incomplete request, 409 for an id in use, 422 when the source or model cannot be opened.
func (s *Server) addStream(w http.ResponseWriter, r *http.Request) {
	var req StreamRequest
	if code, err := decodeJSON(w, r, &req); err != nil {
		writeError(w, code, "%v", err)
		return
	}
	req.ID, req.Source, req.Model = strings.TrimSpace(req.ID), strings.TrimSpace(req.Source), strings.TrimSpace(req.Model)
	names := s.App.Registry.Names()
	if req.Model == "" && len(names) == 1 {
		req.Model = names[0]
	}
	var missing []string
	if req.ID == "" {
		missing = append(missing, `"id"`)
	}
	if req.Source == "" {
		missing = append(missing, `"source"`)
	}
	if req.Model == "" {
		missing = append(missing, fmt.Sprintf(`"model" (one of %s)`, strings.Join(names, ", ")))
	}
	if len(missing) > 0 {
		writeError(w, http.StatusBadRequest, "missing %s in the stream declaration", strings.Join(missing, " and "))
		return
	}
	if !idPattern.MatchString(req.ID) {
		writeError(w, http.StatusBadRequest, "id %q: use 1–64 letters, digits, '.', '_' or '-' (it appears in URLs and metric labels)", req.ID)
		return
	}
	if _, ok := s.App.Registry.Declaration(req.Model); !ok {
		writeError(w, http.StatusBadRequest, "model %q is not declared: use one of %s (GET /api/models)", req.Model, strings.Join(names, ", "))
		return
	}
	if s.streamExists(req.ID) {
		writeError(w, http.StatusConflict, "stream %q already exists: DELETE /api/streams/%s first, or choose another id", req.ID, req.ID)
		return
	}
	c := config.Stream{ID: req.ID, Source: req.Source, Model: req.Model, Loop: req.Loop, Interval: req.Interval,
		MaxFPS: req.MaxFPS, Drop: req.Drop, Transport: req.Transport}
	if err := c.Validate("stream " + c.ID); err != nil {
		writeError(w, http.StatusBadRequest, "%s", scrubMessage(err.Error(), c.Source))
		return
	}
	if err := s.App.AddStream(c); err != nil {
		msg := scrubMessage(err.Error(), c.Source)
		s.Log.Warn("api: add stream failed", "stream", c.ID, "source", redactSource(c.Source), "err", msg)
		writeError(w, http.StatusUnprocessableEntity, "%s", msg)
		return
	}
	s.tracker.forget(c.ID)
	s.Log.Info("api: stream added", "stream", c.ID, "source", redactSource(c.Source), "model", c.Model)
	st, _ := s.App.Pipeline.Stream(c.ID)
	w.Header().Set("Location", "/api/streams/"+c.ID)
	writeJSON(w, http.StatusCreated, s.streamView(st, metrics.StreamRate{}))
}

// deleteStream answers DELETE /api/streams/{id}: 204 once the stream is stopped and released.
func (s *Server) deleteStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.streamExists(id) {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", id)
		return
	}
	if err := s.App.RemoveStream(id); err != nil {
		writeError(w, http.StatusNotFound, "%s", scrubMessage(err.Error(), s.rawSource(id)))
		return
	}
	s.tracker.forget(id)
	s.Log.Info("api: stream removed", "stream", id)
	w.WriteHeader(http.StatusNoContent)
}

// decodeJSON reads one JSON object into v, rejecting unknown fields, trailing data and bodies
// over maxBody; the error says what is wrong and where, with the status code to answer.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) (int, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return http.StatusUnsupportedMediaType, fmt.Errorf("Content-Type %q: send the body as application/json", ct)
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, e := dec.Token(); e != io.EOF {
			err = errors.New("data after the JSON object: send one object")
		}
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
	case errors.As(err, &big):
		return http.StatusRequestEntityTooLarge, fmt.Errorf("body over %d bytes", big.Limit)
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		return http.StatusBadRequest, fmt.Errorf("%s: the fields are id, source, model, loop, interval, max_fps, drop, transport", strings.TrimPrefix(err.Error(), "json: "))
	}
	return http.StatusBadRequest, fmt.Errorf("bad JSON body: %v", err)
}
