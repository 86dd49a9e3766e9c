package evidence

import (
	"time"

	"github.com/vinfer/vinfer/sink"
)

// Best-frame choice: each stream keeps, beside its coded video, what the tracker saw on each
// inferred frame (track id, score, box) for as long as the video is buffered. When a clip is
// complete, each of its events' tracks gets the frame of the clip with the highest score × box
// area, preferring boxes that do not touch the frame border (a cut object is a poor picture);
// the writer decodes that frame from the clip. Nothing is copied from the pipeline's frames,
// so GPU-decoded streams never copy a frame to the host for it.

// MaxObservations bounds one stream's remembered tracked detections (40 bytes each); the
// oldest go first.
const MaxObservations = 16384

// borderMargin is how close to the frame's edge (pixels) a box counts as cut.
const borderMargin = 2

// obs is one tracked detection on one inferred frame.
type obs struct {
	pts   time.Duration
	track int64
	score float32
	box   [4]float32
	cut   bool
}

// rank orders candidates: uncut first, then score × area.
func (o *obs) better(than *obs) bool {
	if o.cut != than.cut {
		return !o.cut
	}
	return o.score*area(o.box) > than.score*area(than.box)
}

func area(b [4]float32) float32 { return max(b[2]-b[0], 0) * max(b[3]-b[1], 0) }

// cutBox reports a box touching the border of a w×h frame (unknown size: not cut).
func cutBox(b [4]float32, w, h int) bool {
	if w <= 0 || h <= 0 {
		return false
	}
	return b[0] <= borderMargin || b[1] <= borderMargin || b[2] >= float32(w)-borderMargin || b[3] >= float32(h)-borderMargin
}

// observe remembers res's tracked detections. Called with ring.mu held.
func (s *streamRec) observe(res *sink.Result) {
	if res.Width > 0 {
		s.w, s.h = res.Width, res.Height
	}
	if n := len(s.obs); n > s.obsHead && res.PTS < s.obs[n-1].pts-time.Second {
		s.obs, s.obsHead = s.obs[:0], 0 // the timeline restarted (a file looping)
	}
	for i := range res.Detections {
		d := &res.Detections[i]
		if d.TrackID <= 0 {
			continue
		}
		if len(s.obs)-s.obsHead >= MaxObservations {
			s.obsHead++
		}
		s.obs = append(s.obs, obs{pts: res.PTS, track: d.TrackID, score: d.Score, box: d.Box,
			cut: cutBox(d.Box, res.Width, res.Height)})
	}
	// Keep what the buffered video can still show: from the open clip's start, else Pre
	// before the newest, with a few seconds for the GOP the clip starts in.
	keep := res.PTS - s.r.Pre - s.r.Post
	if s.open != nil {
		keep = min(keep, s.open.from)
	}
	keep -= 5 * time.Second
	for s.obsHead < len(s.obs) && s.obs[s.obsHead].pts < keep {
		s.obsHead++
	}
	if s.obsHead > len(s.obs)/2 && s.obsHead > 256 { // slide down, keeping the slice's room
		n := copy(s.obs, s.obs[s.obsHead:])
		s.obs, s.obsHead = s.obs[:n], 0
	}
}

// chooseBest sets each event's best frame among the observations of its track from PTS from
// through to; an event whose track has none keeps its own frame. Called with ring.mu held.
func (s *streamRec) chooseBest(evs []clipEvent, from, to time.Duration) {
	best := make(map[int64]*obs, len(evs))
	for i := range evs {
		best[evs[i].track] = nil
	}
	for i := s.obsHead; i < len(s.obs); i++ {
		o := &s.obs[i]
		if o.pts < from || o.pts > to {
			continue
		}
		b, ok := best[o.track]
		if ok && (b == nil || o.better(b)) {
			best[o.track] = o
		}
	}
	for i := range evs {
		e := &evs[i]
		if b := best[e.track]; b != nil {
			e.best = *b
			continue
		}
		e.best = obs{pts: e.pts, track: e.track, score: e.score, box: e.box, cut: cutBox(e.box, s.w, s.h)}
	}
}
