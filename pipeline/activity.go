package pipeline

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/vinfer/vinfer/activity"
	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/sink"
)

// newGate makes a stream's activity gate from its declaration; nil when gating is off. An
// object keeps the stream active for the tracker's buffer plus the scene's retention after the
// last frame it was seen in, so tracks end as they would at full rate.
func newGate(s *config.Stream, sc *scene) (*activity.Gate, error) {
	a := s.Activity
	if !a.Enabled() {
		return nil, nil
	}
	refresh, idleAfter, maxGOP := a.Durations()
	hold := time.Second
	if sc != nil {
		hold = sc.tracker.TrackBuffer + cmp.Or(time.Duration(s.Retention), analytics.DefaultRetention)
	}
	set := activity.Settings{Idle: a.Mode == config.ActivityIdle, Refresh: refresh, IdleAfter: idleAfter,
		MaxGOP: maxGOP, Hold: hold, GOPBytes: cmp.Or(a.GOPBytes, config.DefaultGOPBytes),
		MinFraction: cmp.Or(a.MinFraction, config.DefaultMinFraction), Motion: a.Motion(), Crop: a.Crop == config.CropMotion}
	return activity.New(set)
}

// watched are the classes whose objects keep a gated stream active: those its zones and
// lines count (as declared when the stream was added; a group's name stands for its labels); all (nil map) when a zone or line
// counts every class, with track events, or without a scene.
type watched map[string]bool

func watchedClasses(s *config.Stream) watched {
	if s.TrackEvents || len(s.Zones)+len(s.Lines) == 0 {
		return nil
	}
	w := watched{}
	for _, z := range s.Zones {
		if len(z.Classes) == 0 {
			return nil
		}
		w.add(s, z.Classes)
	}
	for _, l := range s.Lines {
		if len(l.Classes) == 0 {
			return nil
		}
		w.add(s, l.Classes)
	}
	return w
}

// add watches classes, a group's name standing for its labels (detections carry labels).
func (w watched) add(s *config.Stream, classes []string) {
	for _, c := range classes {
		w[c] = true
		for _, l := range s.Groups[c] {
			w[l] = true
		}
	}
}

// hasObjects reports whether a result shows objects that keep a gated stream active: tracked
// ones of a watched class, or any such detection when the stream does not track. (A static
// false positive of a class no zone or line counts, e.g. a screen, does not keep it awake.)
func hasObjects(r *sink.Result, tracked bool, w watched) bool {
	for i := range r.Detections {
		d := &r.Detections[i]
		if (!tracked || d.TrackID != 0) && (w == nil || w[d.Label]) {
			return true
		}
	}
	return false
}

// seen tells a gated stream's gate that r shows objects that keep it active, and where they
// are (the crop of crop: motion keeps their area).
func seen(g *activity.Gate, r *sink.Result, tracked bool, w watched) {
	g.Seen(r.PTS)
	var a [4]float32
	have := false
	for i := range r.Detections {
		d := &r.Detections[i]
		if (tracked && d.TrackID == 0) || (w != nil && !w[d.Label]) {
			continue
		}
		if !have {
			a, have = d.Box, true
			continue
		}
		a = [4]float32{min(a[0], d.Box[0]), min(a[1], d.Box[1]), max(a[2], d.Box[2]), max(a[3], d.Box[3])}
	}
	if have {
		g.SeenArea(r.PTS, int(a[0]), int(a[1]), int(a[2]+0.5), int(a[3]+0.5))
	}
}

// cropBox shifts the boxes of a frame inferred on a crop whose top-left corner is (x, y) in
// the frame into frame pixels.
func cropBox(dets []detect.Detection, x, y float32) {
	for i := range dets {
		b := &dets[i].Box
		b[0], b[1], b[2], b[3] = b[0]+x, b[1]+y, b[2]+x, b[3]+y
	}
}

// ErrNotGated is returned by Wake for a stream without activity gating.
var ErrNotGated = errors.New("the stream has no activity gating (activity.mode: off)")

// Wake makes a gated stream analyse every frame again from its next access unit: an idle one
// decodes the access units held since its last key frame first (docs/activity.md).
func (p *Pipeline) Wake(id string) error {
	p.mu.Lock()
	st, ok := p.streams[id]
	p.mu.Unlock()
	if !ok {
		return fmt.Errorf("pipeline: no stream %q", id)
	}
	if st.gate == nil {
		return ErrNotGated
	}
	st.gate.WakeUp()
	return nil
}
