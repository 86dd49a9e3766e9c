package track

import (
	"math/rand/v2"
	"time"
)

// scene simulates n objects moving at constant velocity in a 1920×1080 frame at 30 fps, seen by
// a detector that misses 5 % of them, jitters boxes by a pixel and gives noisy scores; an object
// that leaves the frame comes back at the opposite edge as a new one.
type scene struct {
	r    *rand.Rand
	objs []sceneObj
	dets []Detection
	n    int64
}

type sceneObj struct {
	x, y, w, h, vx, vy float64
	class              int
}

func newScene(n int, seed uint64) *scene {
	s := &scene{r: rand.New(rand.NewPCG(seed, 1))}
	for range n {
		s.objs = append(s.objs, s.spawn())
	}
	return s
}

func (s *scene) spawn() sceneObj {
	r := s.r
	h := 60 + 120*r.Float64()
	return sceneObj{
		x: 1800 * r.Float64(), y: 950 * r.Float64(), w: h * (0.35 + 0.3*r.Float64()), h: h,
		vx: 8 * (r.Float64() - 0.5), vy: 3 * (r.Float64() - 0.5), class: r.IntN(3),
	}
}

// next advances one frame and returns its detections and PTS.
func (s *scene) next() (time.Duration, []Detection) {
	s.dets = s.dets[:0]
	for i := range s.objs {
		o := &s.objs[i]
		o.x += o.vx
		o.y += o.vy
		if o.x < -o.w || o.x > 1920 || o.y < -o.h || o.y > 1080 {
			*o = s.spawn()
		}
		if s.r.Float64() < 0.05 {
			continue
		}
		j := func() float32 { return float32(s.r.NormFloat64()) }
		s.dets = append(s.dets, Detection{
			Box:     [4]float32{float32(o.x) + j(), float32(o.y) + j(), float32(o.x+o.w) + j(), float32(o.y+o.h) + j()},
			Score:   0.3 + 0.7*float32(s.r.Float64()),
			ClassID: o.class,
		})
	}
	pts := time.Duration(s.n) * time.Second / 30
	s.n++
	return pts, s.dets
}
