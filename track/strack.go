package track

import "time"

// trackState is ByteTrack's track state.
type trackState uint8

const (
	tracked trackState = iota
	lost
	removed
)

// strack is one track of a Tracker (ByteTrack's STrack).
type strack struct {
	kf        kalman
	rect      [4]float64 // box used for matching and duplicate removal
	id        int64
	class     int // association key: the class, or −group for a grouped track
	votes     votes
	score     float32
	det       int // index of this frame's detection
	state     trackState
	activated bool // confirmed: matched in two frames (or born in the first)
	// listed is set once the track has been removed (unconfirmed and unmatched, or lost for longer
	// than the buffer): ByteTrack keeps such tracks in its removed list, and a track in that list
	// that is lost again is dropped at once.
	listed     bool
	firstFrame int64 // Update count at creation
	lastFrame  int64 // Update count at the last match
	lastPTS    time.Duration
	stamp      int64 // Update count at which the track was last found in a list
	dup        bool
}

// activate starts the track on detection det of box b.
func (s *strack) activate(b [4]float64, det int, d *Detection, id, frame int64, pts time.Duration) {
	s.kf.initiate(xyah(b))
	s.rect = s.kf.box()
	s.id = id
	s.class = key(d)
	s.votes = votes{}
	s.votes.add(d.ClassID, d.Score)
	s.score = d.Score
	s.det = det
	s.state = tracked
	s.activated = frame == 1
	s.listed = false
	s.firstFrame, s.lastFrame, s.lastPTS = frame, frame, pts
}

// update corrects the track with detection det of box b (ByteTrack's update and re_activate).
func (s *strack) update(b [4]float64, det, class int, score float32, frame int64, pts time.Duration) {
	s.kf.update(xyah(b))
	s.votes.add(class, score)
	s.rect = s.kf.box()
	s.score = score
	s.det = det
	s.state = tracked
	s.activated = true
	s.lastFrame, s.lastPTS = frame, pts
}

// predict moves the track dt frame periods ahead; a track that is not tracked stops growing.
func (s *strack) predict(dt float64, moveRect bool) {
	if s.state != tracked {
		s.kf.mean[7] = 0
	}
	s.kf.predict(dt)
	if moveRect {
		s.rect = s.kf.box()
	}
}

// key is a detection's association key: its class, or −Group for a grouped detection (classes
// are ≥ 0, so the two never meet).
func key(d *Detection) int {
	if d.Group > 0 {
		return -d.Group
	}
	return d.ClassID
}

// maxVotes bounds the classes a track remembers votes for; a class seen after that many others
// has no say.
const maxVotes = 8

// votes is a track's score summed per class over its detections.
type votes struct {
	n     int
	class [maxVotes]int
	sum   [maxVotes]float32
}

func (v *votes) add(class int, score float32) {
	if !(score > 0) || score > 1 {
		score = 0 // NaN or out of range: a vote of no weight
	}
	for i := range v.n {
		if v.class[i] == class {
			v.sum[i] += score
			return
		}
	}
	if v.n < maxVotes {
		v.class[v.n], v.sum[v.n] = class, score
		v.n++
	}
}

// winner returns the class with the largest sum (the first seen on a tie).
func (v *votes) winner() int {
	best := 0
	for i := 1; i < v.n; i++ {
		if v.sum[i] > v.sum[best] {
			best = i
		}
	}
	return v.class[best]
}
