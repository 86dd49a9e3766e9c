package reslog_test

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/reslog"
	"github.com/vinfer/vinfer/sink"
)

var t0 = time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)

// scene yields results of a stream with n objects moving smoothly, 25 frames a second from t0.
type scene struct {
	stream string
	n      int
	frame  int64
	rnd    *rand.Rand
	dets   []detect.Detection
}

func newScene(stream string, n int) *scene {
	s := &scene{stream: stream, n: n, rnd: rand.New(rand.NewPCG(1, 2))}
	for i := range n {
		x, y := float32(50+100*i), float32(40+30*i)
		s.dets = append(s.dets, detect.Detection{ClassID: i % 3, Label: []string{"person", "car", "bicycle"}[i%3],
			Score: 0.5, Box: [4]float32{x, y, x + 60, y + 150}, TrackID: int64(i + 1)})
	}
	return s
}

func (s *scene) next() *sink.Result {
	for i := range s.dets {
		d := &s.dets[i]
		dx, dy := float32(s.rnd.NormFloat64()*1.5+1), float32(s.rnd.NormFloat64()*0.8)
		for k := range d.Box {
			jit := float32(s.rnd.NormFloat64() * 0.6)
			if k%2 == 0 {
				d.Box[k] += dx + jit
			} else {
				d.Box[k] += dy + jit
			}
		}
		d.Score = float32(min(max(0.6+s.rnd.NormFloat64()*0.1, 0), 1))
	}
	r := &sink.Result{Stream: s.stream, Frame: s.frame, PTS: time.Duration(s.frame) * 40 * time.Millisecond,
		Wallclock: t0.Add(time.Duration(s.frame) * 40 * time.Millisecond), Width: 1280, Height: 720, Detections: s.dets}
	s.frame++
	return r
}

func open(t testing.TB, dir string) *reslog.Log {
	t.Helper()
	l := &reslog.Log{Dir: dir}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// The frames of a stream that stops without a closing result (no track left to end) show
// once their block has waited its span: nothing stays in memory for the next frame.
func TestStoppedStreamFlushed(t *testing.T) {
	l := &reslog.Log{Dir: t.TempDir(), Block: 100 * time.Millisecond}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s := newScene("cam1", 3)
	for range 10 {
		l.Write(s.next())
	}
	testutil.Eventually(t, 30*time.Second, "the frames are readable", func() bool { return len(all(t, l, "cam1")) == 10 })
}

func all(t testing.TB, l *reslog.Log, stream string) []reslog.Frame {
	t.Helper()
	var out []reslog.Frame
	err := l.Query(stream, time.Time{}, time.Time{}, func(f *reslog.Frame) error {
		c := *f
		c.Objects = slices.Clone(f.Objects)
		out = append(out, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The log gives back every frame written, boxes to a tenth of a pixel and scores to 1/10,000,
// with each track's zones from its zone events.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	l := open(t, dir)
	s := newScene("cam1", 5)
	var want []reslog.Frame
	for i := range 200 {
		r := s.next()
		if i == 10 {
			r.Events = []event.Event{{Type: event.ZoneEnter, TrackID: 2, Zone: "door"}, {Type: event.ZoneEnter, TrackID: 2, Zone: "hall"}}
		}
		if i == 20 {
			r.Events = []event.Event{{Type: event.ZoneLeave, TrackID: 2, Zone: "door"}}
		}
		f := reslog.Frame{Frame: r.Frame, PTS: r.PTS, Wall: r.Wallclock, Width: r.Width, Height: r.Height}
		for _, d := range r.Detections {
			o := reslog.Object{TrackID: d.TrackID, ClassID: d.ClassID, Label: d.Label,
				Score: float32(float64(round(d.Score, 1e4)) / 1e4)}
			for k, v := range d.Box {
				o.Box[k] = float32(float64(round(v, 10)) / 10)
			}
			switch {
			case d.TrackID == 2 && i >= 10 && i < 20:
				o.Zones = []string{"door", "hall"}
			case d.TrackID == 2 && i >= 20:
				o.Zones = []string{"hall"}
			}
			f.Objects = append(f.Objects, o)
		}
		want = append(want, f)
		if err := l.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Write(&sink.Result{Stream: "cam1", End: true}); err != nil {
		t.Fatal(err)
	}
	got := all(t, l, "cam1")
	if len(got) != len(want) {
		t.Fatalf("%d frames back, want %d", len(got), len(want))
	}
	for i := range want {
		if !frameEqual(got[i], want[i]) {
			t.Fatalf("frame %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	// A time range gives the frames of that range only.
	var n int
	from, to := t0.Add(2*time.Second), t0.Add(3*time.Second)
	if err := l.Query("cam1", from, to, func(f *reslog.Frame) error {
		if f.Wall.Before(from) || !f.Wall.Before(to) {
			t.Errorf("frame %d at %v outside [%v, %v)", f.Frame, f.Wall, from, to)
		}
		n++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 25 {
		t.Errorf("%d frames in one second at 25 fps, want 25", n)
	}
	if err := l.Query("../x", time.Time{}, time.Time{}, func(*reslog.Frame) error { return nil }); err == nil {
		t.Error("a stream id with a path in it was queried")
	}
}

func round(v float32, scale float64) int64 {
	x := float64(v) * scale
	r := float64(int64(x))
	if x-r > 0.5 || (x-r == 0.5 && int64(r)%2 != 0) {
		r++
	}
	return int64(r)
}

func frameEqual(a, b reslog.Frame) bool {
	if a.Frame != b.Frame || a.PTS != b.PTS || !a.Wall.Equal(b.Wall) || a.Width != b.Width || a.Height != b.Height ||
		len(a.Objects) != len(b.Objects) {
		return false
	}
	for i := range a.Objects {
		x, y := a.Objects[i], b.Objects[i]
		if x.TrackID != y.TrackID || x.ClassID != y.ClassID || x.Label != y.Label || x.Score != y.Score ||
			x.Box != y.Box || !slices.Equal(x.Zones, y.Zones) {
			return false
		}
	}
	return true
}

// A crash mid-append leaves part of a block at the end of the newest chunk: the next start
// cuts it (counted) and keeps every whole block before it; logging goes on after it.
func TestTornTailCut(t *testing.T) {
	dir := t.TempDir()
	l := &reslog.Log{Dir: dir, Block: 200 * time.Millisecond}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	s := newScene("cam1", 5)
	for range 100 {
		l.Write(s.next())
	}
	l.Close()
	before := len(all(t, l, "cam1"))
	files, _ := filepath.Glob(filepath.Join(dir, "cam1", "*.rlog"))
	if len(files) != 1 {
		t.Fatalf("chunks %v, want one", files)
	}
	fi, _ := os.Stat(files[0])
	// The crash: half a block appended (a header promising more than follows).
	f, err := os.OpenFile(files[0], os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22})
	f.Close()

	l2 := open(t, dir)
	if got := l2.Stats().Torn; got != 1 {
		t.Errorf("torn tails counted %d, want 1", got)
	}
	if fi2, _ := os.Stat(files[0]); fi2.Size() != fi.Size() {
		t.Errorf("chunk is %d bytes after the cut, want %d (its whole blocks)", fi2.Size(), fi.Size())
	}
	if got := len(all(t, l2, "cam1")); got != before {
		t.Errorf("%d frames after the cut, want the %d of the whole blocks", got, before)
	}
	for range 50 {
		l2.Write(s.next())
	}
	l2.Close()
	if got := len(all(t, l2, "cam1")); got != before+50 {
		t.Errorf("%d frames after logging on, want %d", got, before+50)
	}
	// A block whose bytes were damaged (not a torn tail: its CRC fails) ends what is read of
	// its chunk, and is cut at the next start too.
	files, _ = filepath.Glob(filepath.Join(dir, "cam1", "*.rlog"))
	last := files[len(files)-1]
	b, _ := os.ReadFile(last)
	b[len(b)-3] ^= 0xff
	os.WriteFile(last, b, 0o644)
	l3 := open(t, dir)
	if got := l3.Stats().Torn; got != 1 {
		t.Errorf("damaged block: torn tails counted %d, want 1", got)
	}
}

// Retention: chunks that end before what KeepFrom says go, then the oldest beyond MaxBytes.
func TestRetention(t *testing.T) {
	dir := t.TempDir()
	var keep time.Time
	l := &reslog.Log{Dir: dir, Block: time.Second, Chunk: 10 * time.Second,
		KeepFrom: func(string) time.Time { return keep }}
	if err := l.Init(); err != nil {
		t.Fatal(err)
	}
	s := newScene("cam1", 2)
	for range 25 * 60 { // one minute: 6 chunks
		l.Write(s.next())
	}
	l.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "cam1", "*.rlog"))
	if len(files) != 6 {
		t.Fatalf("%d chunks for a minute in 10 s chunks, want 6", len(files))
	}
	keep = t0.Add(35 * time.Second) // the recording now starts here: chunks ending before go
	l.Retain()
	files, _ = filepath.Glob(filepath.Join(dir, "cam1", "*.rlog"))
	if len(files) != 3 {
		t.Errorf("%d chunks after the recording before 35 s went, want 3 (30–40 s on)", len(files))
	}
	fr := all(t, l, "cam1")
	if len(fr) == 0 || fr[0].Wall.After(t0.Add(35*time.Second)) {
		t.Errorf("the frames at 35 s went with the older ones")
	}
	l.MaxBytes = 1
	l.Retain()
	files, _ = filepath.Glob(filepath.Join(dir, "cam1", "*.rlog"))
	if len(files) != 0 {
		t.Errorf("%d chunks of a stopped stream with a 1-byte cap, want none", len(files))
	}
}

// resultCopy keeps a result with its own detections (scene reuses its slice).
type resultCopy struct{ res sink.Result }

func copyResult(r *sink.Result) *resultCopy {
	c := &resultCopy{res: *r}
	c.res.Detections = slices.Clone(r.Detections)
	return c
}

func (c *resultCopy) r() *sink.Result { return &c.res }
