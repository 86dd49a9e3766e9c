package evidence

import (
	"image"
	"image/jpeg"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/sink"
)

// det is a tracked detection at PTS pts.
type det struct {
	pts   time.Duration
	track int64
	score float32
	box   [4]float32
}

// feedResults runs units through ring and delivers, lag behind them (the pipeline's decoder
// runs ahead of its results), one result per unit with the detections at its PTS and the
// events decided there.
func feedResults(r *Recorder, ring *Ring, units []media.AccessUnit, dets []det, evs []event.Event, lag time.Duration) {
	pts := make([]time.Duration, len(units))
	for i := range units {
		pts[i] = units[i].PTS
	}
	slices.Sort(pts)
	next := 0
	deliver := func(p time.Duration) {
		res := &sink.Result{Stream: "sample", PTS: p, Width: 768, Height: 432}
		for _, d := range dets {
			if d.pts == p {
				res.Detections = append(res.Detections, detect.Detection{Label: "person", Score: d.score, Box: d.box, TrackID: d.track})
			}
		}
		for _, e := range evs {
			if e.PTS == p {
				res.Events = append(res.Events, e)
			}
		}
		r.Write(res)
	}
	for i := range units {
		ring.ObserveAccessUnit(&units[i])
		for next < len(pts) && pts[next]+lag <= units[i].PTS {
			deliver(pts[next])
			next++
		}
	}
	for ; next < len(pts); next++ {
		deliver(pts[next])
	}
}

// nearest returns the unit PTS nearest to d.
func nearest(units []media.AccessUnit, d time.Duration) time.Duration {
	best := units[0].PTS
	for _, u := range units {
		if (u.PTS - d).Abs() < (best - d).Abs() {
			best = u.PTS
		}
	}
	return best
}

// TestBestFrame records the line crossing at 19.1 s of the bundled sample with the track seen
// on several frames: its snapshot is the frame with the highest score × box area in the clip
// (9 s to 24.1 s), not a bigger box cut by the frame border, not one before the clip or after
// it, not another track's. The JPEG is that frame of the file (compared with FFmpeg's decoding
// of it), and frame.jpg is the event's own frame.
func TestBestFrame(t *testing.T) {
	units := readUnits(t, 30*time.Second)
	at := func(s float64) time.Duration { return nearest(units, time.Duration(s*float64(time.Second))) }
	e := ev("sample", at(19.1))
	e.Score, e.Box = 0.9, [4]float32{400, 100, 560, 400}
	dets := []det{
		{at(5), 1, 0.99, [4]float32{100, 50, 700, 420}},  // the biggest, before the clip
		{at(12), 1, 0.8, [4]float32{300, 80, 500, 400}},  // 51200
		{at(14), 1, 0.95, [4]float32{0, 60, 400, 420}},   // bigger, cut by the left border
		{at(15), 1, 0.85, [4]float32{320, 60, 560, 410}}, // 71400: the best
		{at(16), 2, 1, [4]float32{100, 50, 700, 420}},    // another track
		{at(19.1), 1, 0.9, e.Box},                        // the event's own: 43200
		{at(22), 1, 0.9, [4]float32{500, 100, 600, 300}}, // 18000
		{at(27), 1, 0.99, [4]float32{100, 50, 700, 420}}, // after the clip
	}
	r := newRecorder(t, t.TempDir(), nil)
	feedResults(r, r.Ring("sample"), units, dets, []event.Event{e}, 300*time.Millisecond)
	it := clipOf(t, r, e.ID)
	if !it.HasSnapshot || !it.HasFrame || it.Best == nil {
		t.Fatalf("item %+v: want a best-frame snapshot and the event's frame", it)
	}
	if got, want := it.Best.PTS, at(15).Seconds(); math.Abs(got-want) > 1e-6 || it.Best.Box != dets[3].box || it.Best.Cut {
		t.Fatalf("best frame %+v, want PTS %v box %v, not cut", it.Best, want, dets[3].box)
	}

	// The JPEGs are those frames: each is nearer FFmpeg's decoding of its own frame than of
	// the other's.
	frameIndex := func(d time.Duration) int {
		pts := make([]time.Duration, len(units))
		for i := range units {
			pts[i] = units[i].PTS
		}
		slices.Sort(pts)
		return slices.Index(pts, d)
	}
	f15, f19 := ffmpegLuma(t, frameIndex(at(15))), ffmpegLuma(t, frameIndex(at(19.1)))
	best, own := jpegLuma(t, r, e.ID, defs.EvidenceSnapshot), jpegLuma(t, r, e.ID, defs.EvidenceFrame)
	d1, d2 := lumaDiff(best, f15), lumaDiff(best, f19)
	d3, d4 := lumaDiff(own, f19), lumaDiff(own, f15)
	t.Logf("snapshot.jpg vs frame 15 s: %.2f, vs 19.1 s: %.2f; frame.jpg vs 19.1 s: %.2f, vs 15 s: %.2f", d1, d2, d3, d4)
	if d1 >= d2/2 || d3 >= d4/2 {
		t.Fatalf("the snapshots are not the frames chosen (mean |ΔY| %.2f vs %.2f, %.2f vs %.2f)", d1, d2, d3, d4)
	}
	for _, k := range []defs.EvidenceFileKind{defs.EvidenceSnapshotBoxed, defs.EvidenceFrameBoxed} {
		f, err := r.EvidenceFile(e.ID.String(), k)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

// TestBestFrameCutOnly: a track seen only with boxes on the border gets the best of those,
// marked cut.
func TestBestFrameCutOnly(t *testing.T) {
	units := readUnits(t, 25*time.Second)
	at := func(s float64) time.Duration { return nearest(units, time.Duration(s*float64(time.Second))) }
	e := ev("sample", at(15))
	e.Score, e.Box = 0.5, [4]float32{0, 100, 100, 400}
	dets := []det{{at(12), 1, 0.9, [4]float32{0, 100, 200, 400}}, {at(15), 1, 0.5, e.Box}}
	r := newRecorder(t, t.TempDir(), func(r *Recorder) { r.Pre, r.Post = 5*time.Second, 2*time.Second })
	feedResults(r, r.Ring("sample"), units, dets, []event.Event{e}, 300*time.Millisecond)
	it := clipOf(t, r, e.ID)
	if it.Best == nil || !it.Best.Cut || it.Best.Box != dets[0].box {
		t.Fatalf("best %+v, want the cut box at 12 s", it.Best)
	}
}

// TestObservationsBounded: a long stream of tracked detections keeps at most MaxObservations
// and only the last Pre + Post (+ 5 s) without a clip open, without allocating once warm.
func TestObservationsBounded(t *testing.T) {
	r := newRecorder(t, t.TempDir(), nil)
	res := &sink.Result{Stream: "s", Width: 768, Height: 432}
	for i := range 50 {
		res.Detections = append(res.Detections, detect.Detection{TrackID: int64(i + 1), Score: 0.5, Box: [4]float32{10, 10, 50, 50}})
	}
	for f := range 3000 { // 100 s at 30 fps, 50 tracks
		res.PTS = time.Duration(f) * time.Second / 30
		r.Write(res)
	}
	s := r.stream("s")
	s.ring.mu.Lock()
	n, oldest, capacity := len(s.obs)-s.obsHead, s.obs[s.obsHead].pts, cap(s.obs)
	s.ring.mu.Unlock()
	if n > MaxObservations || capacity > 4*MaxObservations {
		t.Fatalf("%d observations kept (capacity %d), want at most %d", n, capacity, MaxObservations)
	}
	if span := res.PTS - oldest; span > 20*time.Second+time.Second/30 {
		t.Fatalf("observations reach back %v, want at most pre + post + 5 s", span)
	}
	f := 3000
	if n := testing.AllocsPerRun(300, func() {
		res.PTS = time.Duration(f) * time.Second / 30
		f++
		r.Write(res)
	}); n != 0 {
		t.Errorf("Write of a result with tracked detections: %v allocations, want 0 in steady state", n)
	}
}

// ffmpegLuma returns FFmpeg's decoding of frame n of the sample, luma only.
func ffmpegLuma(t *testing.T, n int) []byte {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-i", testutil.Asset(t, sample), "-vf", "select=eq(n\\,"+strconv.Itoa(n)+")",
		"-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "gray", "-").Output()
	if err != nil || len(out) != 768*432 {
		t.Fatalf("ffmpeg frame %d: %v (%d bytes)", n, err, len(out))
	}
	return out
}

// jpegLuma returns a snapshot's luma, 768×432.
func jpegLuma(t *testing.T, r *Recorder, id event.ID, kind defs.EvidenceFileKind) []byte {
	t.Helper()
	f, err := r.EvidenceFile(id.String(), kind)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := jpeg.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	y, ok := img.(*image.YCbCr)
	if !ok || y.Rect.Dx() != 768 || y.Rect.Dy() != 432 {
		t.Fatalf("snapshot %T %v", img, img.Bounds())
	}
	out := make([]byte, 0, 768*432)
	for row := range 432 {
		out = append(out, y.Y[row*y.YStride:row*y.YStride+768]...)
	}
	return out
}

// lumaDiff is the mean absolute difference of two luma planes.
func lumaDiff(a, b []byte) float64 {
	s := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		s += max(d, -d)
	}
	return float64(s) / float64(len(a))
}
