package pipeline

import (
	"time"

	"github.com/vinfer/vinfer/detect"
)

// Bounds of a cascade's cadence memory.
const (
	cadenceObjects = 256              // objects followed per stream
	cadenceForget  = 2 * time.Second  // stream time after which an unseen object is forgotten
	cadenceIdle    = 60 * time.Second // wall time after which a silent stream's memory goes
	cadenceIoU     = 0.3              // box overlap that makes two crops one object
)

// cadences is a cascade's per-stream memory of the objects it cropped, for its cadence
// (Cascade.Every, Cascade.Once). The tracker's ids come later, in the output stage: objects are
// followed here by box overlap from frame to frame.
type cadences struct {
	every   time.Duration
	once    bool
	streams map[string]*cadence
	sweep   time.Time
}

type cadence struct {
	every time.Duration
	once  bool
	objs  []cadObj
	pts   time.Duration // the latest frame's
	seen  time.Time     // wall clock of the latest frame
}

type cadObj struct {
	box        [4]float32
	last, seen time.Duration // stream time of its last crop and of its last sighting
}

// stream returns the memory of stream id at its frame pts, nil when every frame is cropped.
// Objects unseen for cadenceForget are forgotten, and everything when time goes backwards.
func (c *cadences) stream(id string, pts time.Duration) *cadence {
	if c.every <= 0 && !c.once {
		return nil
	}
	now := time.Now()
	if c.streams == nil {
		c.streams = map[string]*cadence{}
	}
	if now.Sub(c.sweep) > cadenceIdle {
		c.sweep = now
		for k, s := range c.streams {
			if now.Sub(s.seen) > cadenceIdle {
				delete(c.streams, k)
			}
		}
	}
	s := c.streams[id]
	if s == nil {
		s = &cadence{}
		c.streams[id] = s
	}
	if pts < s.pts {
		s.objs = s.objs[:0]
	}
	s.pts, s.seen = pts, now
	kept := s.objs[:0]
	for _, o := range s.objs {
		if pts-o.seen <= cadenceForget {
			kept = append(kept, o)
		}
	}
	s.objs = kept
	s.every, s.once = c.every, c.once
	return s
}

// due reports whether the object at box is cropped at pts: a new object is; a known one when
// Every has passed since its last crop (never again with Once).
func (s *cadence) due(box [4]float32, pts time.Duration) bool {
	bi, bv := -1, float32(cadenceIoU)
	for i := range s.objs {
		if v := detect.IoU(box, s.objs[i].box); v >= bv {
			bi, bv = i, v
		}
	}
	if bi < 0 {
		if len(s.objs) >= cadenceObjects {
			s.objs = s.objs[1:]
		}
		s.objs = append(s.objs, cadObj{box: box, last: pts, seen: pts})
		return true
	}
	o := &s.objs[bi]
	o.box, o.seen = box, pts
	if s.once || pts-o.last < s.every {
		return false
	}
	o.last = pts
	return true
}
