package track

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/vinfer/vinfer/track/lap"
)

// Defaults, those of ByteTrack.
const (
	DefaultTrackThresh            = 0.5
	DefaultLowThresh              = 0.1
	DefaultNewTrackThresh         = 0.6
	DefaultMatchThresh            = 0.8
	DefaultLowMatchThresh         = 0.5
	DefaultUnconfirmedMatchThresh = 0.7
	DefaultDuplicateThresh        = 0.15
	DefaultFrameRate              = 30
	DefaultTrackBuffer            = time.Second
)

// Errors.
var (
	// ErrConfig is returned by Init for a field out of range; the message names the field.
	ErrConfig = errors.New("track: invalid configuration")
	// ErrNotInitialized is returned by Update before Init.
	ErrNotInitialized = errors.New("track: Update before Init")
	// ErrTimeBackwards is returned by Update for a PTS before the previous one; call Reset first
	// when the stream's timeline restarts.
	ErrTimeBackwards = errors.New("track: PTS goes backwards")
)

// Tracker tracks the objects of one stream. Set the fields (zero values mean ByteTrack's defaults),
// call Init, then Update once per processed frame in PTS order. A Tracker is not safe for
// concurrent use.
type Tracker struct {
	// TrackThresh splits detections: a score ≥ TrackThresh is high (first association, may start
	// a track), below it low (second association only). Default 0.5.
	TrackThresh float64
	// LowThresh drops detections scoring below it. Default 0.1.
	LowThresh float64
	// NewTrackThresh is the least score of a high detection that starts a track. Default 0.6.
	NewTrackThresh float64
	// MatchThresh is the largest IoU distance (1 − IoU) of the first association, between tracked
	// and lost tracks and high detections. Default 0.8.
	MatchThresh float64
	// LowMatchThresh is the largest IoU distance of the second association, between the tracks left
	// and low detections. Default 0.5.
	LowMatchThresh float64
	// UnconfirmedMatchThresh is the largest IoU distance between the tracks born in the previous
	// frame and the high detections left. Default 0.7.
	UnconfirmedMatchThresh float64
	// DuplicateThresh: a tracked and a lost track of the same class closer than this IoU distance
	// are duplicates, and the younger one is dropped. Default 0.15.
	DuplicateThresh float64
	// FuseScore multiplies IoU by the detection score in the first and unconfirmed associations,
	// as ByteTrack's Python tracker does outside MOT20 (its C++ ports do not). Default off.
	FuseScore bool
	// FrameRate is the nominal frame rate of the stream in frames per second: the Kalman filter
	// steps in units of 1/FrameRate. Default 30.
	FrameRate float64
	// TrackBuffer is how long a lost track is kept for re-identification after its last match.
	// Default 1 s (ByteTrack's 30 frames at 30 fps).
	TrackBuffer time.Duration

	// matchLastBox matches tracks by their box after the last Kalman update instead of the
	// predicted one, as the ByteTrack-cpp revision of the equivalence reference does (test only).
	matchLastBox bool

	ready   bool
	period  float64 // nominal frame period in nanoseconds
	frame   int64   // Updates since Init or Reset
	lastPTS time.Duration
	nextID  int64

	tracked, lost []*strack
	free          []*strack

	// Per-Update scratch.
	dbox                              [][4]float64
	dscore                            []float32
	dclass, dlabel                    []int // association key, class
	high, low, remainDets             []int32
	pool, unconfirmed, remainTracked  []*strack
	curTracked, refind, curLost, gone []*strack
	nextTracked, nextLost             []*strack
	rowSol, colSol                    []int
	edges, sorted                     []edge
	byX                               []keyed
	parent, count, rows, cols         []int32
	cost                              []float64
	solver                            lap.Solver
}

// Init checks the configuration and fills in the defaults. It returns an error wrapping ErrConfig
// for a threshold outside its range or a negative frame rate or buffer. Init also resets the
// tracker.
func (t *Tracker) Init() error {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&t.TrackThresh, DefaultTrackThresh)
	def(&t.LowThresh, DefaultLowThresh)
	def(&t.NewTrackThresh, DefaultNewTrackThresh)
	def(&t.MatchThresh, DefaultMatchThresh)
	def(&t.LowMatchThresh, DefaultLowMatchThresh)
	def(&t.UnconfirmedMatchThresh, DefaultUnconfirmedMatchThresh)
	def(&t.DuplicateThresh, DefaultDuplicateThresh)
	def(&t.FrameRate, DefaultFrameRate)
	if t.TrackBuffer == 0 {
		t.TrackBuffer = DefaultTrackBuffer
	}
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"TrackThresh", t.TrackThresh}, {"LowThresh", t.LowThresh}, {"NewTrackThresh", t.NewTrackThresh},
		{"MatchThresh", t.MatchThresh}, {"LowMatchThresh", t.LowMatchThresh},
		{"UnconfirmedMatchThresh", t.UnconfirmedMatchThresh}, {"DuplicateThresh", t.DuplicateThresh},
	} {
		if !(f.v > 0 && f.v <= 1) {
			return fmt.Errorf("%w: %s %v, want 0 < v ≤ 1", ErrConfig, f.name, f.v)
		}
	}
	if t.LowThresh > t.TrackThresh {
		return fmt.Errorf("%w: LowThresh %v above TrackThresh %v", ErrConfig, t.LowThresh, t.TrackThresh)
	}
	if !(t.FrameRate > 0) || math.IsInf(t.FrameRate, 0) {
		return fmt.Errorf("%w: FrameRate %v, want frames per second > 0", ErrConfig, t.FrameRate)
	}
	if t.TrackBuffer < 0 {
		return fmt.Errorf("%w: TrackBuffer %v, want ≥ 0", ErrConfig, t.TrackBuffer)
	}
	t.period = float64(time.Second) / t.FrameRate
	t.ready = true
	t.Reset()
	return nil
}

// Reset forgets every track, for a new timeline (a looped file, a reconnected camera). Track IDs
// keep counting, so they stay unique for the Tracker's life.
func (t *Tracker) Reset() {
	t.free = append(t.free, t.tracked...)
	t.free = append(t.free, t.lost...)
	t.tracked, t.lost = t.tracked[:0], t.lost[:0]
	t.frame = 0
}

// Update runs one frame of presentation time pts with its detections (none is fine: a frame where
// nothing was seen) and appends to out the tracks matched in this frame, in ByteTrack's order;
// it returns out. Detections with a non-finite or empty box or a score below LowThresh are
// ignored. Once the tracker has seen its largest frame, Update does not allocate.
//
// The Kalman step is the PTS difference from the previous Update in periods of 1/FrameRate. A
// lost track expires at the end of the first Update where the time since its last match exceeds
// TrackBuffer by more than half a period (at the nominal rate: TrackBuffer·FrameRate frames, as
// ByteTrack's max_time_lost); as in ByteTrack it can still be found in the next Update, unless
// that one comes more than TrackBuffer plus 2.5 periods after the last match (then any track that
// old is dropped, lost or not: the stream stalled). Update returns
// ErrTimeBackwards, changing nothing, when pts is before the previous Update's.
func (t *Tracker) Update(pts time.Duration, dets []Detection, out []Track) ([]Track, error) {
	if !t.ready {
		return out, ErrNotInitialized
	}
	dt := 1.0
	if t.frame > 0 {
		if pts < t.lastPTS {
			return out, ErrTimeBackwards
		}
		dt = float64(pts-t.lastPTS) / t.period
	}
	t.frame++
	t.lastPTS = pts
	frame := t.frame
	t.expire(pts)

	t.splitDetections(dets)

	// Tracks: confirmed and lost ones are predicted and matched first; unconfirmed ones later.
	t.pool, t.unconfirmed = t.pool[:0], t.unconfirmed[:0]
	for _, s := range t.tracked {
		if s.activated {
			t.pool = append(t.pool, s)
		} else {
			t.unconfirmed = append(t.unconfirmed, s)
		}
	}
	t.pool = append(t.pool, t.lost...)
	for _, s := range t.pool {
		s.predict(dt, !t.matchLastBox)
	}

	// First association: tracked and lost tracks with high detections.
	t.curTracked, t.refind, t.curLost, t.gone = t.curTracked[:0], t.refind[:0], t.curLost[:0], t.gone[:0]
	t.remainTracked, t.remainDets = t.remainTracked[:0], t.remainDets[:0]
	t.associate(t.pool, t.high, t.MatchThresh, t.FuseScore)
	for i, s := range t.pool {
		j := t.rowSol[i]
		switch {
		case j >= 0 && s.state == tracked:
			t.updateTrack(s, t.high[j], frame, pts)
			t.curTracked = append(t.curTracked, s)
		case j >= 0:
			t.updateTrack(s, t.high[j], frame, pts)
			t.refind = append(t.refind, s)
		case s.state == tracked:
			t.remainTracked = append(t.remainTracked, s)
		}
	}
	for j, d := range t.high {
		if t.colSol[j] < 0 {
			t.remainDets = append(t.remainDets, d)
		}
	}

	// Second association: tracked tracks left with low detections; the rest are lost.
	t.associate(t.remainTracked, t.low, t.LowMatchThresh, false)
	for i, s := range t.remainTracked {
		if j := t.rowSol[i]; j >= 0 {
			t.updateTrack(s, t.low[j], frame, pts)
			t.curTracked = append(t.curTracked, s)
		} else {
			s.state = lost
			t.curLost = append(t.curLost, s)
		}
	}

	// Unconfirmed tracks with the high detections left; unmatched ones are removed.
	t.associate(t.unconfirmed, t.remainDets, t.UnconfirmedMatchThresh, t.FuseScore)
	for i, s := range t.unconfirmed {
		if j := t.rowSol[i]; j >= 0 {
			t.updateTrack(s, t.remainDets[j], frame, pts)
			t.curTracked = append(t.curTracked, s)
		} else {
			s.state = removed
			s.listed = true
		}
	}

	// New tracks from the high detections still left.
	for j, d := range t.remainDets {
		if t.colSol[j] >= 0 || float64(t.dscore[d]) < t.NewTrackThresh {
			continue
		}
		s := t.alloc()
		t.nextID++
		s.activate(t.dbox[d], int(d), &dets[d], t.nextID, frame, pts)
		t.curTracked = append(t.curTracked, s)
	}

	t.updateLists(frame, pts)

	for _, s := range t.tracked {
		if s.activated {
			out = append(out, Track{
				TrackID: s.id,
				Box:     [4]float32{float32(s.rect[0]), float32(s.rect[1]), float32(s.rect[2]), float32(s.rect[3])},
				Score:   s.score,
				ClassID: s.votes.winner(),
				Det:     s.det,
			})
		}
	}
	return out, nil
}

// expire drops the tracks unmatched for longer than TrackBuffer plus 2.5 frame periods before
// they are matched: when Updates are sparse (a stalled stream), the removal at the end of an
// Update (see updateLists) comes too late to bound the time.
func (t *Tracker) expire(pts time.Duration) {
	limit := t.TrackBuffer + time.Duration(2.5*t.period)
	keep := func(l []*strack) []*strack {
		n := 0
		for _, s := range l {
			if pts-s.lastPTS > limit {
				t.free = append(t.free, s)
				continue
			}
			l[n] = s
			n++
		}
		clear(l[n:])
		return l[:n]
	}
	t.tracked = keep(t.tracked)
	t.lost = keep(t.lost)
}

// splitDetections converts the frame's detections and lists the high and low ones.
func (t *Tracker) splitDetections(dets []Detection) {
	t.dbox, t.dscore, t.dclass, t.dlabel = t.dbox[:0], t.dscore[:0], t.dclass[:0], t.dlabel[:0]
	t.high, t.low = t.high[:0], t.low[:0]
	for i := range dets {
		d := &dets[i]
		b := [4]float64{float64(d.Box[0]), float64(d.Box[1]), float64(d.Box[2]), float64(d.Box[3])}
		t.dbox = append(t.dbox, b)
		t.dscore = append(t.dscore, d.Score)
		t.dclass = append(t.dclass, key(d))
		t.dlabel = append(t.dlabel, d.ClassID)
		w, h, s := b[2]-b[0], b[3]-b[1], float64(d.Score)
		if !(w > 0 && h > 0) || math.IsInf(w, 0) || math.IsInf(h, 0) || math.IsNaN(b[0]+b[1]) {
			continue
		}
		switch {
		case s >= t.TrackThresh:
			t.high = append(t.high, int32(i))
		case s >= t.LowThresh:
			t.low = append(t.low, int32(i))
		}
	}
}

func (t *Tracker) updateTrack(s *strack, d int32, frame int64, pts time.Duration) {
	s.update(t.dbox[d], int(d), t.dlabel[d], t.dscore[d], frame, pts)
}

// updateLists builds the next tracked and lost lists as ByteTrack does: tracked = this frame's
// matched and new tracks, then the re-found ones; lost = the lost tracks not re-found plus the
// newly lost, by track ID, without the tracks on the removed list; then duplicates go. Lost tracks
// past the buffer are put on the removed list, and leave the lost list one Update later.
func (t *Tracker) updateLists(frame int64, pts time.Duration) {
	limit := t.TrackBuffer + time.Duration(t.period/2)
	for _, s := range t.lost {
		if s.state != tracked && pts-s.lastPTS > limit {
			s.state = removed
			t.gone = append(t.gone, s)
		}
	}
	t.nextTracked = append(append(t.nextTracked[:0], t.curTracked...), t.refind...)
	t.nextLost = t.nextLost[:0]
	for _, s := range t.lost {
		if s.state != tracked && !s.listed {
			t.nextLost = append(t.nextLost, s)
		}
	}
	for _, s := range t.curLost {
		if !s.listed {
			t.nextLost = append(t.nextLost, s)
		}
	}
	slices.SortFunc(t.nextLost, func(a, b *strack) int { return cmp.Compare(a.id, b.id) })
	for _, s := range t.gone {
		s.listed = true
	}
	t.removeDuplicates()

	// Recycle the tracks that left both lists.
	for _, s := range t.nextTracked {
		s.stamp = frame
	}
	for _, s := range t.nextLost {
		s.stamp = frame
	}
	for _, l := range [][]*strack{t.tracked, t.lost, t.curTracked} {
		for _, s := range l {
			if s.stamp != frame {
				s.stamp = frame
				t.free = append(t.free, s)
			}
		}
	}
	t.tracked, t.nextTracked = t.nextTracked, t.tracked
	t.lost, t.nextLost = t.nextLost, t.lost
}

// removeDuplicates drops, from each pair of a tracked and a lost track of the same class (or
// group) closer than DuplicateThresh in IoU distance, the one tracked for fewer frames (the
// tracked one on a tie).
func (t *Tracker) removeDuplicates() {
	any := false
	for _, a := range t.nextTracked {
		for _, b := range t.nextLost {
			if a.class != b.class || 1-iou(a.rect, b.rect) >= t.DuplicateThresh {
				continue
			}
			any = true
			if a.lastFrame-a.firstFrame > b.lastFrame-b.firstFrame {
				b.dup = true
			} else {
				a.dup = true
			}
		}
	}
	if !any {
		return
	}
	keep := func(l []*strack) []*strack {
		n := 0
		for _, s := range l {
			if !s.dup {
				l[n] = s
				n++
			}
			s.dup = false
		}
		return l[:n]
	}
	t.nextTracked = keep(t.nextTracked)
	t.nextLost = keep(t.nextLost)
}

// alloc returns a recycled track, or a new one.
func (t *Tracker) alloc() *strack {
	if n := len(t.free); n > 0 {
		s := t.free[n-1]
		t.free = t.free[:n-1]
		*s = strack{}
		return s
	}
	return &strack{}
}
