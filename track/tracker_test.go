package track

import (
	"errors"
	"runtime"
	"testing"
	"time"
)

func newTracker(t *testing.T, tr Tracker) *Tracker {
	t.Helper()
	if err := tr.Init(); err != nil {
		t.Fatal(err)
	}
	return &tr
}

func at(frame int, fps float64) time.Duration {
	return time.Duration(float64(frame) * float64(time.Second) / fps)
}

func det(x, y, w, h float32, score float32, class int) Detection {
	return Detection{Box: [4]float32{x, y, x + w, y + h}, Score: score, ClassID: class}
}

// ids returns the track IDs of out.
func ids(out []Track) []int64 {
	var v []int64
	for _, o := range out {
		v = append(v, o.TrackID)
	}
	return v
}

func TestInitDefaults(t *testing.T) {
	tr := newTracker(t, Tracker{})
	want := Tracker{
		TrackThresh: 0.5, LowThresh: 0.1, NewTrackThresh: 0.6, MatchThresh: 0.8, LowMatchThresh: 0.5,
		UnconfirmedMatchThresh: 0.7, DuplicateThresh: 0.15, FrameRate: 30, TrackBuffer: time.Second,
	}
	if tr.TrackThresh != want.TrackThresh || tr.LowThresh != want.LowThresh || tr.NewTrackThresh != want.NewTrackThresh ||
		tr.MatchThresh != want.MatchThresh || tr.LowMatchThresh != want.LowMatchThresh ||
		tr.UnconfirmedMatchThresh != want.UnconfirmedMatchThresh || tr.DuplicateThresh != want.DuplicateThresh ||
		tr.FrameRate != want.FrameRate || tr.TrackBuffer != want.TrackBuffer {
		t.Fatalf("defaults %+v", tr)
	}
}

func TestInitErrors(t *testing.T) {
	cases := []struct {
		name string
		tr   Tracker
	}{
		{"negative threshold", Tracker{TrackThresh: -0.1}},
		{"match above 1", Tracker{MatchThresh: 1.5}},
		{"low above track", Tracker{TrackThresh: 0.3, LowThresh: 0.4}},
		{"negative frame rate", Tracker{FrameRate: -25}},
		{"negative buffer", Tracker{TrackBuffer: -time.Second}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.tr.Init(); !errors.Is(err, ErrConfig) {
				t.Fatalf("err %v, want ErrConfig", err)
			}
		})
	}
}

func TestUpdateErrors(t *testing.T) {
	var tr Tracker
	if _, err := tr.Update(0, nil, nil); !errors.Is(err, ErrNotInitialized) {
		t.Fatalf("before Init: %v", err)
	}
	tr2 := newTracker(t, Tracker{})
	if _, err := tr2.Update(time.Second, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tr2.Update(time.Second/2, nil, nil); !errors.Is(err, ErrTimeBackwards) {
		t.Fatalf("backwards: %v", err)
	}
	tr2.Reset()
	if _, err := tr2.Update(0, nil, nil); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

// TestLifecycle follows tracks through the cases of ByteTrack's update, one frame a step (tracks
// compared in ID order).
func TestLifecycle(t *testing.T) {
	a := func(x float32) Detection { return det(x, 100, 50, 100, 0.9, 0) }
	cases := []struct {
		name string
		dets []Detection
		want []int64 // output track IDs, in order
		det  []int   // their detection indices
	}{
		{"first frame starts confirmed tracks", []Detection{a(100), a(400)}, []int64{1, 2}, []int{0, 1}},
		{"matched by IoU in any order", []Detection{a(402), a(103)}, []int64{1, 2}, []int{1, 0}},
		{"a later detection starts an unconfirmed track", []Detection{a(106), a(404), a(800)}, []int64{1, 2}, []int{0, 1}},
		{"confirmed on its second match", []Detection{a(109), a(406), a(801)}, []int64{1, 2, 3}, []int{0, 1, 2}},
		{"low-score detection continues a track", []Detection{det(112, 100, 50, 100, 0.3, 0), a(408), a(802)}, []int64{1, 2, 3}, []int{0, 1, 2}},
		{"another class does not continue it", []Detection{det(115, 100, 50, 100, 0.9, 1), a(410), a(803)}, []int64{2, 3}, []int{1, 2}},
		{"the lost track is found again", []Detection{a(118), a(412), a(804)}, []int64{1, 2, 3}, []int{0, 1, 2}},
		{"a lone low-score detection starts nothing", []Detection{a(121), a(414), a(805), det(1200, 100, 50, 100, 0.3, 0)}, []int64{1, 2, 3}, []int{0, 1, 2}},
		{"below NewTrackThresh starts nothing", []Detection{a(124), a(416), a(806), det(1200, 100, 50, 100, 0.55, 0)}, []int64{1, 2, 3}, []int{0, 1, 2}},
		{"ignored boxes", []Detection{a(127), a(418), a(807), det(1500, 100, 0, 100, 0.9, 0), det(1500, 100, 10, 100, 0.05, 0)}, []int64{1, 2, 3}, []int{0, 1, 2}},
	}
	tr := newTracker(t, Tracker{})
	var out []Track
	for f, c := range cases {
		var err error
		out, err = tr.Update(at(f, 30), c.dets, out[:0])
		if err != nil {
			t.Fatal(err)
		}
		sortByID(out)
		if got := ids(out); !equal(got, c.want) {
			t.Fatalf("%s: tracks %v, want %v", c.name, got, c.want)
		}
		for k, o := range out {
			if o.Det != c.det[k] || o.Score != c.dets[o.Det].Score || o.ClassID != c.dets[o.Det].ClassID {
				t.Fatalf("%s: track %d: det %d score %v class %d, want det %d", c.name, o.TrackID, o.Det, o.Score, o.ClassID, c.det[k])
			}
		}
	}
}

func sortByID(out []Track) {
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].TrackID < out[j-1].TrackID; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTrackBuffer: a lost track is found again within TrackBuffer, counted in time, whatever
// the frame rate and however many frames were processed meanwhile.
func TestTrackBuffer(t *testing.T) {
	cases := []struct {
		name   string
		fps    float64
		frames []int // frames processed (the object is seen in the first 5 and the last)
		sameID bool
	}{
		// Frames away from the last match: ByteTrack keeps a track 30 frames at 30 fps and lets it
		// be found in the Update after it expired.
		{"30 fps, 32 frames away", 30, []int{0, 1, 2, 3, 4, 36}, true},
		{"30 fps, 33 frames away", 30, []int{0, 1, 2, 3, 4, 37}, false},
		{"10 fps, 12 frames away", 10, []int{0, 1, 2, 3, 4, 16}, true},
		{"10 fps, 13 frames away", 10, []int{0, 1, 2, 3, 4, 17}, false},
		{"every frame processed, 32 away", 30, append([]int{0, 1, 2, 3, 4}, seq(5, 37)...), true},
		{"every frame processed, 33 away", 30, append([]int{0, 1, 2, 3, 4}, seq(5, 38)...), false},
		{"every 10th frame processed, 30 away", 30, []int{0, 1, 2, 3, 4, 14, 24, 34}, true},
		{"every 10th frame processed, 40 away", 30, []int{0, 1, 2, 3, 4, 14, 24, 34, 44}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracker(t, Tracker{FrameRate: c.fps})
			var out []Track
			last := c.frames[len(c.frames)-1]
			for k, f := range c.frames {
				var dets []Detection
				if k < 5 || f == last {
					dets = []Detection{det(100, 100, 50, 100, 0.9, 0)}
				}
				var err error
				out, err = tr.Update(at(f, c.fps), dets, out[:0])
				if err != nil {
					t.Fatal(err)
				}
			}
			if got := len(out) == 1 && out[0].TrackID == 1; got != c.sameID {
				t.Fatalf("last frame tracks %v, want track 1: %v", ids(out), c.sameID)
			}
		})
	}
}

func seq(from, to int) []int {
	var v []int
	for f := from; f < to; f++ {
		v = append(v, f)
	}
	return v
}

// TestMotionWithSkippedFrames: an object moving 12 px a frame, 40 px wide, processed every 5th
// frame (60 px apart, no overlap from one processed frame to the next) or at irregular
// intervals, keeps its identity because the Kalman step follows the PTS.
func TestMotionWithSkippedFrames(t *testing.T) {
	cases := []struct {
		name   string
		frames []int
	}{
		{"every frame", seq(0, 60)},
		{"every 5th frame", []int{0, 1, 2, 3, 4, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55}},
		{"irregular", []int{0, 1, 2, 3, 4, 5, 7, 12, 13, 18, 22, 27, 29, 34, 39, 40, 45}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := newTracker(t, Tracker{})
			var out []Track
			for _, f := range c.frames {
				x := 100 + 12*float32(f)
				var err error
				out, err = tr.Update(at(f, 30), []Detection{det(x, 200, 40, 80, 0.9, 0)}, out[:0])
				if err != nil {
					t.Fatal(err)
				}
				if len(out) != 1 || out[0].TrackID != 1 {
					t.Fatalf("frame %d: tracks %v, want [1]", f, ids(out))
				}
			}
		})
	}
}

// TestSteadyStateAllocs: once warmed up, Update does not allocate.
func TestSteadyStateAllocs(t *testing.T) {
	s := newScene(50, 7)
	tr := newTracker(t, Tracker{})
	out := make([]Track, 0, 256)
	for range 600 {
		pts, dets := s.next()
		out, _ = tr.Update(pts, dets, out[:0])
	}
	n := testing.AllocsPerRun(200, func() {
		pts, dets := s.next()
		out, _ = tr.Update(pts, dets, out[:0])
	})
	if n != 0 {
		t.Fatalf("%v allocations per Update", n)
	}
	if len(out) < 30 {
		t.Fatalf("only %d tracks of 50 objects", len(out))
	}
}

func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{10, 50, 200} {
		b.Run(itoa(n)+"objects", func(b *testing.B) {
			s := newScene(n, 11)
			var tr Tracker
			if err := tr.Init(); err != nil {
				b.Fatal(err)
			}
			// Pre-generate frames so the benchmark measures Update alone.
			type frame struct {
				pts  time.Duration
				dets []Detection
			}
			frames := make([]frame, 3300)
			for i := range frames {
				pts, dets := s.next()
				frames[i] = frame{pts, append([]Detection(nil), dets...)}
			}
			out := make([]Track, 0, 2*n)
			for _, f := range frames[:300] {
				out, _ = tr.Update(f.pts, f.dets, out[:0])
			}
			b.ReportAllocs()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU()
			i := 300
			for b.Loop() {
				if i == len(frames) {
					b.StopTimer()
					tr.Reset()
					for _, f := range frames[:300] {
						out, _ = tr.Update(f.pts, f.dets, out[:0])
					}
					i = 300
					b.StartTimer()
				}
				out, _ = tr.Update(frames[i].pts, frames[i].dets, out[:0])
				i++
			}
			// Thread CPU time per Update: on a loaded machine, wall time (ns/op) also counts the
			// time the thread waited for a core.
			if cpu := threadCPU() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
			}
		})
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
