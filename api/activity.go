package api

import (
	"errors"
	"net/http"

	"github.com/vinfer/vinfer/internal/defs"
)

// ActivityView is a gated stream's activity as GET /api/streams reports it.
type ActivityView struct {
	// Mode is the declared mode (gate, idle); State is full, gated or idle.
	Mode  string `json:"mode"`
	State string `json:"state"`
	// MotionFraction is the moving share of the last frame checked (0…1); MotionBoxes its
	// moving regions, [x0, y0, x1, y1] in frame pixels.
	MotionFraction float64  `json:"motion_fraction"`
	MotionBoxes    [][4]int `json:"motion_boxes"`
	// FramesGated counts frames not inferred because nothing moved.
	FramesGated int64 `json:"frames_gated"`
	// KeyFrameProbes, Wakes and BurstAccessUnits count idle key frames decoded, wakes and the
	// held access units decoded in wake bursts; BurstMS is the time those bursts took.
	KeyFrameProbes   int64   `json:"key_frame_probes"`
	Wakes            int64   `json:"wakes"`
	BurstAccessUnits int64   `json:"burst_access_units"`
	BurstMS          float64 `json:"burst_ms"`
	// Cut counts access units a full GOP buffer refused.
	Cut int64 `json:"cut"`
	// WakeRequests counts the wakes asked from outside (this API's wake, a GB28181 alarm).
	WakeRequests int64 `json:"wake_requests"`
	// FramesCropped counts frames inferred on the motion regions' crop (crop: motion).
	FramesCropped int64 `json:"frames_cropped"`
	// GOPSeconds is the measured key-frame interval; IdleOff why idle decoding is off.
	GOPSeconds float64 `json:"gop_seconds"`
	IdleOff    string  `json:"idle_off,omitempty"`
	// Parked: idle without a decoder of its own (its key frames decoded on a shared one).
	Parked bool `json:"parked"`
	// WokeResults counts wakes whose first result came out; WakeMS and WakeMaxMS are the mean
	// and the longest time from a wake's start to that result.
	WokeResults int64   `json:"woke_results"`
	WakeMS      float64 `json:"wake_ms"`
	WakeMaxMS   float64 `json:"wake_max_ms"`
	// HeldBytes is the host memory the gate holds (GOP buffer, sampled luma rows).
	HeldBytes int `json:"held_bytes"`
	// Unsampled counts GPU frames whose motion could not be checked (inferred).
	Unsampled int64 `json:"unsampled,omitempty"`
}

func activityView(a *defs.Activity) *ActivityView {
	if a == nil {
		return nil
	}
	v := &ActivityView{Mode: a.Mode, State: a.State.String(), MotionFraction: round4(a.Fraction),
		MotionBoxes: make([][4]int, 0, len(a.Boxes)), FramesGated: a.Gated, KeyFrameProbes: a.Probes,
		Wakes: a.Wakes, BurstAccessUnits: a.BurstUnits, BurstMS: round2(float64(a.BurstNanos) / 1e6),
		Cut: a.Cut, WakeRequests: a.Requests, FramesCropped: a.Cropped, GOPSeconds: round2(a.GOP.Seconds()), IdleOff: a.IdleOff}
	for _, b := range a.Boxes {
		v.MotionBoxes = append(v.MotionBoxes, [4]int{b.X0, b.Y0, b.X1, b.Y1})
	}
	v.Parked, v.WokeResults, v.WakeMaxMS = a.Parked, a.WokeResults, round2(float64(a.WakeMaxNanos)/1e6)
	v.HeldBytes, v.Unsampled = a.HeldBytes, a.Unsampled
	if a.WokeResults > 0 {
		v.WakeMS = round2(float64(a.WakeNanos) / float64(a.WokeResults) / 1e6)
	}
	return v
}

func round4(v float64) float64 { return float64(int64(v*10000+0.5)) / 10000 }

// errNotGated is what wakeStream answers for a stream without gating (the pipeline's error).
var errNotGated = errors.New("not gated")

// wakeStream answers POST /api/streams/{id}/wake: 204 once the stream is asked to wake (it
// does at its next access unit), 404 for no such stream, 409 for a stream without activity
// gating.
func (s *Server) wakeStream(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	st, ok := s.App.Stream(id)
	if !ok {
		writeError(w, http.StatusNotFound, "no stream %q: GET /api/streams lists them", id)
		return
	}
	wk, ok := s.App.(defs.Waker)
	if !ok || st.Activity == nil {
		writeError(w, http.StatusConflict, "stream %q has no activity gating (activity.mode: off): it analyses every frame", id)
		return
	}
	if err := wk.WakeStream(id); err != nil {
		writeError(w, http.StatusConflict, "stream %q: %v", id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
