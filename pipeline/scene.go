package pipeline

import (
	"errors"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/objects"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/track"
)

// scene turns one stream's detections into tracked objects and scene events: the tracker sets
// each matched detection's TrackID, the analyzer decides the zone and line events. It runs on
// the output goroutine, once per result in stream order, and allocates nothing in steady state.
type scene struct {
	tracker  *track.Tracker
	analyzer *analytics.Analyzer
	rules    *objects.Stage // class groups; nil: none
	// names are the labels of the class ids seen (index = class id, up to maxNamed), to name a
	// grouped track by the class its detections voted for.
	names  []string
	dets   []track.Detection
	tracks []track.Track
	objs   []analytics.Object
	frame  analytics.Frame
	last   sink.Result // the last processed frame's identity (no slices), for end
	// checked is the frame size the zones and lines were last checked against; warn reports
	// shapes that do not fit the frame (declared before its size was known).
	checkedW, checkedH int
	checkedSet         *analytics.Set
	warn               func(format string, args ...any)
	votes              votes // cascades' reads voted per track (plate)
	reid               *reid // appearance re-identification (tracker.reid); nil: off
}

// newScene builds a stream's scene; nil when the stream does not track (tracker: none).
func newScene(s *config.Stream, rules *objects.Stage) (*scene, error) {
	if !s.Tracker.Enabled() {
		return nil, nil
	}
	t := &track.Tracker{}
	if c := s.Tracker; c != nil {
		t.TrackThresh, t.LowThresh, t.NewTrackThresh, t.MatchThresh = c.TrackThresh, c.LowThresh, c.NewTrackThresh, c.MatchThresh
		t.TrackBuffer, t.FrameRate = time.Duration(c.TrackBuffer), c.FrameRate
	}
	if err := t.Init(); err != nil {
		return nil, err
	}
	set, err := analytics.Compile(s.Config)
	if err != nil {
		return nil, err
	}
	return &scene{tracker: t, rules: rules, analyzer: analytics.New(analytics.Options{Stream: s.ID}, set)}, nil
}

// maxNamed bounds scene.names: class ids above it keep their own label.
const maxNamed = 4096

// process tracks r's detections and appends the frame's events to r.Events.
func (sc *scene) process(r *sink.Result) {
	sc.dets = sc.dets[:0]
	for i := range r.Detections {
		d := &r.Detections[i]
		d.TrackID = 0
		g, _ := sc.rules.Group(d.Label)
		sc.dets = append(sc.dets, track.Detection{Box: d.Box, Score: d.Score, ClassID: d.ClassID, Group: g})
		if g > 0 && d.ClassID >= 0 && d.ClassID < maxNamed {
			if d.ClassID >= len(sc.names) {
				sc.names = append(sc.names, make([]string, d.ClassID+1-len(sc.names))...)
			}
			sc.names[d.ClassID] = d.Label
		}
	}
	tracks, err := sc.tracker.Update(r.PTS, sc.dets, sc.tracks[:0])
	if errors.Is(err, track.ErrTimeBackwards) { // a looped file or a timestamp reset: start over
		sc.tracker.Reset()
		tracks, _ = sc.tracker.Update(r.PTS, sc.dets, sc.tracks[:0])
	}
	sc.tracks = tracks
	sc.objs = sc.objs[:0]
	for _, t := range tracks {
		if t.Det < 0 || t.Det >= len(r.Detections) {
			continue
		}
		d := &r.Detections[t.Det]
		d.TrackID = t.TrackID
		if t.ClassID != d.ClassID && t.ClassID >= 0 && t.ClassID < len(sc.names) && sc.names[t.ClassID] != "" {
			d.ClassID, d.Label = t.ClassID, sc.names[t.ClassID] // the grouped track's voted class
		}
		_, group := sc.rules.Group(d.Label)
		sc.objs = append(sc.objs, analytics.Object{TrackID: t.TrackID, ClassID: d.ClassID, Label: d.Label, Group: group, Score: d.Score, Box: d.Box})
	}
	if sc.reid != nil { // appearance ids replace the tracker's (reid.go)
		sc.reid.begin(r)
		sc.reid.assign(r)
		sc.reid.objects(sc.objs)
	}
	if set := sc.analyzer.Set(); r.Width != sc.checkedW || r.Height != sc.checkedH || set != sc.checkedSet {
		sc.checkedW, sc.checkedH, sc.checkedSet = r.Width, r.Height, set
		c := set.Config()
		if err := c.Check(r.Width, r.Height, nil); err != nil && sc.warn != nil {
			sc.warn("stream %s: zones and lines do not fit the %dx%d frame: %v", r.Stream, r.Width, r.Height, err)
		}
	}
	sc.frame = analytics.Frame{Index: r.Frame, PTS: r.PTS, Time: r.Wallclock, Width: r.Width, Height: r.Height, Objects: sc.objs}
	r.Events = sc.analyzer.Process(r.Events[:0], &sc.frame)
	sc.votes.process(r)
	if sc.reid != nil {
		sc.reid.events(r)
	}
	sc.last = *r
	sc.last.Detections, sc.last.Events, sc.last.Secondary, sc.last.SecondaryParent, sc.last.SecondaryModel = nil, nil, nil, nil, nil
	sc.last.Attrs, sc.last.AttrParent, sc.last.Voted = nil, nil, nil
}

// end fills r as the stream's closing result (End): the last frame's identity, no detections,
// and the events of every track still known ending now.
func (sc *scene) end(r *sink.Result) {
	dets, evs := r.Detections[:0], r.Events[:0]
	*r = sc.last
	r.Detections = dets
	r.ResetSecondary()
	r.Events = sc.analyzer.Flush(evs)
	sc.votes.process(r)
	if sc.reid != nil {
		sc.reid.events(r)
	}
	r.End = true
}
