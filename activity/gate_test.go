package activity

import (
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/media"
)

const fps = 10

// clip is a synthetic stream: one access unit per frame (no reordering), a key frame every
// gop, a square moving while moving(pts) is true.
type clip struct {
	gop    time.Duration
	keys   func(pts time.Duration) bool // nil: every gop
	moving func(pts time.Duration) bool
	size   int // access unit bytes
}

// sim drives a gate the way a stream's goroutine does (pipeline/stream.go gatedDecode, onFrame)
// with a decoder that turns each access unit into its frame at once.
type sim struct {
	t        *testing.T
	g        *Gate
	c        clip
	f        *frame.Frame // the picture drawn
	frame    *frame.Frame // what the gate sees (nil: f)
	decoded  int
	inferred []time.Duration
	seen     func(pts time.Duration) bool // the detector finds an object on the inferred frame
}

func newSim(t testing.TB, s Settings, c clip) *sim {
	g, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	f := &frame.Frame{Format: frame.FormatI420, Width: 320, Height: 180}
	f.Strides[0] = 320
	f.Planes[0] = make([]byte, 320*180)
	return &sim{g: g, c: c, f: f}
}

func settings(idle bool) Settings {
	return Settings{Idle: idle, Refresh: 5 * time.Second, IdleAfter: 10 * time.Second, MaxGOP: 4 * time.Second,
		Hold: time.Second, GOPBytes: 1 << 20, MinFraction: 0.002}
}

func (s *sim) draw(pts time.Duration) {
	f := s.f
	x := -1
	if s.c.moving != nil && s.c.moving(pts) {
		x = int(pts/(100*time.Millisecond)) * 7 % (f.Width - 40)
	}
	for r := 0; r < f.Height; r++ {
		for c := 0; c < f.Width; c++ {
			v := uint8(60 + (c/16+r/16)%2*40)
			if x >= 0 && c >= x && c < x+40 && r >= 60 && r < 100 {
				v = 230
			}
			f.Planes[0][r*f.Strides[0]+c] = v
		}
	}
	f.PTS = pts
}

func (s *sim) decode(au *media.AccessUnit) {
	s.decoded++
	s.draw(au.PTS)
	f := s.f
	if s.frame != nil {
		f = s.frame
		f.PTS = au.PTS
	}
	if s.g.Frame(f) == Infer {
		s.inferred = append(s.inferred, au.PTS)
		if s.seen != nil && s.seen(au.PTS) {
			s.g.Seen(au.PTS)
		}
	}
}

func (s *sim) burst(units []media.AccessUnit) {
	for i := range units {
		s.decode(&units[i])
	}
	s.g.BurstDone()
}

func (s *sim) run(from, to time.Duration) {
	data := make([]byte, max(s.c.size, 1))
	for pts := from; pts < to; pts += time.Second / fps {
		key := pts%s.c.gop == 0
		if s.c.keys != nil {
			key = s.c.keys(pts)
		}
		au := &media.AccessUnit{Codec: media.CodecH264, PTS: pts, DTS: pts, Key: key, Data: data}
		switch s.g.Admit(au) {
		case Hold:
			continue
		case Probe:
			s.decode(au)
			burst, woke := s.g.Probed(au)
			if !woke {
				continue
			}
			s.burst(burst)
		case Wake:
			s.burst(s.g.Burst())
			if !s.g.DecodeWaking(au) {
				continue
			}
		}
		s.decode(au)
	}
}

func (s *sim) inferredIn(from, to time.Duration) int {
	n := 0
	for _, p := range s.inferred {
		if p >= from && p < to {
			n++
		}
	}
	return n
}

// TestGateStillScene: a still scene is inferred at its first frame and then once per refresh;
// the other frames are gated (counted).
func TestGateStillScene(t *testing.T) {
	s := newSim(t, settings(false), clip{gop: time.Second})
	s.run(0, 20*time.Second)
	want := []time.Duration{0, 5 * time.Second, 10 * time.Second, 15 * time.Second}
	if len(s.inferred) != len(want) {
		t.Fatalf("inferred %v, want %v", s.inferred, want)
	}
	for i := range want {
		if s.inferred[i] != want[i] {
			t.Fatalf("inferred %v, want %v", s.inferred, want)
		}
	}
	a := s.g.Snapshot("gate")
	if a.Gated != 200-4 || a.State != defs.ActivityGated || s.decoded != 200 {
		t.Fatalf("decoded %d, snapshot %+v", s.decoded, a)
	}
}

// TestGateMotionAndObjects: every frame with motion is inferred, and every frame while an
// object found on an inferred frame lives (Hold after it), moving or not.
func TestGateMotionAndObjects(t *testing.T) {
	s := newSim(t, settings(false), clip{gop: time.Second, moving: func(p time.Duration) bool {
		return p >= 3*time.Second && p < 4*time.Second
	}})
	s.seen = func(p time.Duration) bool { return p >= 3*time.Second && p < 6*time.Second } // a person stops
	s.run(0, 12*time.Second)
	// motion from 3 s (the first frame learns nothing but is compared with the background)
	if n := s.inferredIn(3*time.Second+time.Second/fps, 7*time.Second); n != 39 {
		t.Fatalf("inferred %d frames in (3 s, 7 s), want all 39 (motion, then the object held 1 s): %v", n, s.inferred)
	}
	if n := s.inferredIn(7*time.Second+time.Second/fps, 11*time.Second+900*time.Millisecond); n != 0 {
		t.Fatalf("inferred %d frames of the still scene after the object's hold, want 0 (next refresh 5 s after the last inferred frame): %v", n, s.inferred)
	}
}

// TestGateIdleWake: after idle_after without activity only key frames are decoded; motion
// wakes the stream at the next key frame and the held GOP is decoded in a burst, so the frames
// between the previous key frame and the wake are inferred.
func TestGateIdleWake(t *testing.T) {
	onset := 30*time.Second + 400*time.Millisecond
	s := newSim(t, settings(true), clip{gop: time.Second, moving: func(p time.Duration) bool {
		return p >= onset && p < 33*time.Second
	}})
	s.run(0, 25*time.Second)
	if st := s.g.State(); st != defs.ActivityIdle {
		t.Fatalf("state %v after 25 s of a still scene, want idle", st)
	}
	before := s.decoded
	s.run(25*time.Second, 30*time.Second)
	if n := s.decoded - before; n != 5 {
		t.Fatalf("decoded %d frames in 5 s idle, want the 5 key frames", n)
	}
	s.run(30*time.Second, 40*time.Second)
	a := s.g.Snapshot("idle")
	if a.Wakes != 1 || a.BurstUnits != 10 || a.Probes == 0 {
		t.Fatalf("snapshot %+v: want one wake with a burst of 10 access units", a)
	}
	if n := s.inferredIn(onset+time.Second/fps, 33*time.Second); n != 25 {
		t.Fatalf("inferred %d of the 25 moving frames after the onset's first: %v", n, s.inferred)
	}
	for i := 1; i < len(s.inferred); i++ {
		if s.inferred[i] <= s.inferred[i-1] {
			t.Fatalf("frames inferred out of order or twice: %v", s.inferred)
		}
	}
	if a.GOP != time.Second {
		t.Fatalf("GOP %v, want 1s", a.GOP)
	}
}

// TestGateWakeUp: a wake call makes an idle stream decode its held GOP and every frame.
func TestGateWakeUp(t *testing.T) {
	s := newSim(t, settings(true), clip{gop: time.Second})
	s.run(0, 25*time.Second+500*time.Millisecond)
	if st := s.g.State(); st != defs.ActivityIdle {
		t.Fatalf("state %v, want idle", st)
	}
	s.g.WakeUp()
	before := s.decoded
	s.run(25*time.Second+500*time.Millisecond, 26*time.Second)
	if a := s.g.Snapshot("idle"); a.Wakes != 1 || a.BurstUnits != 5 || s.decoded-before != 10 {
		t.Fatalf("decoded %d after the wake call, snapshot %+v; want the 5 held and 5 new", s.decoded-before, a)
	}
}

// TestGateLongGOP: a GOP longer than max_gop turns idle decoding off, with the reason; so do
// key frames that stop coming.
func TestGateLongGOP(t *testing.T) {
	for _, c := range []struct {
		name string
		keys func(time.Duration) bool
		want string
	}{
		{"6 s GOP", func(p time.Duration) bool { return p%(6*time.Second) == 0 }, "longer than max_gop"},
		{"key frames stop", func(p time.Duration) bool { return p < 3*time.Second && p%time.Second == 0 }, "no key frame for"},
		{"no key frame at all", func(time.Duration) bool { return false }, "no key frame in the first"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newSim(t, settings(true), clip{gop: time.Second, keys: c.keys})
			s.run(0, 40*time.Second)
			a := s.g.Snapshot("idle")
			if a.State == defs.ActivityIdle || a.Probes != 0 || s.decoded != 400 || !strings.Contains(a.IdleOff, c.want) {
				t.Fatalf("decoded %d, snapshot %+v; want every frame decoded and idle_off %q", s.decoded, a, c.want)
			}
		})
	}
}

// TestGateBurstCut: a GOP larger than gop_bytes is cut (counted); the wake decodes what was
// held and the units cut are never decoded.
func TestGateBurstCut(t *testing.T) {
	set := settings(true)
	set.GOPBytes = 64 << 10
	s := newSim(t, set, clip{gop: time.Second, size: 20 << 10, moving: func(p time.Duration) bool {
		return p >= 30*time.Second+500*time.Millisecond && p < 33*time.Second
	}})
	s.run(0, 40*time.Second)
	a := s.g.Snapshot("idle")
	if a.Wakes != 1 || a.Cut == 0 || a.BurstUnits != 3 {
		t.Fatalf("snapshot %+v: want a wake whose burst of 10 was cut to 3", a)
	}
	// the key frame that woke the stream and its GOP are decoded and analysed
	if n := s.inferredIn(31*time.Second, 33*time.Second); n != 20 {
		t.Fatalf("inferred %d of the 20 moving frames from the waking key frame on: %v", n, s.inferred)
	}
}

// TestGateWakeUpAfterCut: a wake call in the middle of a GOP whose units were cut decodes what
// was held, then nothing until the next key frame (the units in between cannot be decoded).
func TestGateWakeUpAfterCut(t *testing.T) {
	set := settings(true)
	set.GOPBytes = 64 << 10
	s := newSim(t, set, clip{gop: time.Second, size: 20 << 10})
	s.run(0, 25*time.Second+500*time.Millisecond)
	if st := s.g.State(); st != defs.ActivityIdle {
		t.Fatalf("state %v, want idle", st)
	}
	s.g.WakeUp()
	before := s.decoded
	s.run(25*time.Second+500*time.Millisecond, 27*time.Second)
	if a := s.g.Snapshot("idle"); a.Wakes != 1 || a.BurstUnits != 3 || s.decoded-before != 13 {
		t.Fatalf("decoded %d after the wake call, snapshot %+v; want the 3 held, then the 10 from the next key frame", s.decoded-before, a)
	}
}

// TestGateFrameAllocs: checking a frame for motion allocates nothing.
func TestGateFrameAllocs(t *testing.T) {
	s := newSim(t, settings(false), clip{gop: time.Second})
	s.draw(0)
	s.g.Frame(s.f)
	pts := time.Duration(0)
	if n := testing.AllocsPerRun(100, func() {
		pts += time.Second / fps
		s.f.PTS = pts
		s.g.Frame(s.f)
	}); n != 0 {
		t.Fatalf("%v allocations per frame", n)
	}
}

// BenchmarkGateFrame is the gate's cost per decoded frame (motion detection included) on a
// 768×432 frame, the bundled sample's size.
func BenchmarkGateFrame(b *testing.B) {
	g, err := New(settings(false))
	if err != nil {
		b.Fatal(err)
	}
	f := &frame.Frame{Format: frame.FormatI420, Width: 768, Height: 432}
	f.Strides[0] = 768
	f.Planes[0] = make([]byte, 768*432)
	for i := range f.Planes[0] {
		f.Planes[0][i] = uint8(i * 7 % 251)
	}
	g.Frame(f)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f.PTS += time.Second / 30
		f.Planes[0][i%len(f.Planes[0])] ^= 0xff
		g.Frame(f)
	}
}
