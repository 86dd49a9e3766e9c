package record_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// framePTS returns the presentation times (s) of path's frames as FFmpeg reads them.
func framePTS(t testing.TB, path string) []float64 {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
		"packet=pts_time", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var v struct {
		Packets []struct {
			PTS string `json:"pts_time"`
		}
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	var pts []float64
	for _, p := range v.Packets {
		f, err := strconv.ParseFloat(p.PTS, 64)
		if err != nil {
			t.Fatalf("a packet without a PTS in %s: %q", path, p.PTS)
		}
		pts = append(pts, f)
	}
	return pts
}

// Each segment lists the source PTS of its media time 0: every frame a player shows at media
// time m of a segment is the source's frame of PTS zero+m (the results log's key), B-frames
// included. The segment being written is listed too, up to its last fragment, and plays.
func TestSegmentZeroMapsToSourcePTS(t *testing.T) {
	units := readUnits(t, sample, 12*time.Second)
	dir := t.TempDir()
	r := newRecorder(t, dir, nil)
	o := r.Observer("cam1")
	fed := map[int64]bool{} // source PTS, µs
	half := len(units) / 2
	for i := range units {
		fed[units[i].PTS.Microseconds()] = true
		if i < half {
			o.ObserveAccessUnit(&units[i])
		}
	}
	// Half fed: once the writer has every GOP handed over, the open segment is listed, up to
	// the GOPs written, and plays.
	var gops int64
	for i := 1; i < half; i++ {
		if units[i].Key {
			gops++
		}
	}
	testutil.Eventually(t, time.Minute, "the writer takes the GOPs", func() bool {
		st := r.Stats()
		return st.Fragments+st.Dropped >= gops
	})
	segs, _ := r.Segments("cam1", time.Time{}, time.Time{})
	if len(segs) == 0 || !segs[len(segs)-1].Open {
		t.Fatalf("the segment being written is not listed: %+v", segs)
	}
	open := segs[len(segs)-1]
	if !open.HasZero || !open.End.After(open.Start) || filepath.Ext(open.Name) != ".part" {
		t.Fatalf("the open segment: %+v", open)
	}
	f, err := r.Open("cam1", open.Name)
	if err != nil {
		t.Fatalf("opening the open segment %s: %v", open.Name, err)
	}
	f.Close()
	decodes(t, filepath.Join(dir, "cam1", open.Name))
	for _, bad := range []string{"x.part", "../cam1.part", "00000000000001.part"} {
		if _, err := r.Open("cam1", bad); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
	for i := half; i < len(units); i++ {
		o.ObserveAccessUnit(&units[i])
	}
	o.EndOfStream()
	r.Close()

	segs, err = r.Segments("cam1", time.Time{}, time.Time{})
	if err != nil || len(segs) < 3 {
		t.Fatalf("%d segments (%v)", len(segs), err)
	}
	seen := 0
	for _, s := range segs {
		if s.Open || !s.HasZero {
			t.Fatalf("a closed segment without its zero: %+v", s)
		}
		for _, m := range framePTS(t, filepath.Join(dir, "cam1", s.Name)) {
			us := s.Zero.Microseconds() + int64(math.Round(m*1e6))
			if !fed[us] && !fed[us-1] && !fed[us+1] { // ffprobe prints µs, rounded
				t.Errorf("%s: a frame at media time %.6f s maps to PTS %d µs, which no unit had", s.Name, m, us)
			}
			seen++
		}
	}
	if seen != len(units) {
		t.Errorf("%d frames in the segments, %d fed", seen, len(units))
	}

	// An export of a middle range, across segments, carries its own zero.
	exp := filepath.Join(t.TempDir(), "mid.mp4")
	ef, _ := os.Create(exp)
	if err := r.Export(ef, "cam1", t0.Add(4*time.Second), t0.Add(9*time.Second)); err != nil {
		t.Fatal(err)
	}
	ef.Close()
	b, _ := os.ReadFile(exp)
	i := bytes.Index(b, []byte("freevinfzero"))
	if i < 4 {
		t.Fatal("the export has no zero box")
	}
	zero := time.Duration(binary.BigEndian.Uint64(b[i+12:]))
	if zero < 3*time.Second || zero > 5*time.Second {
		t.Errorf("the export of [4 s, 9 s) starts at PTS %v, want its first GOP's, 3–5 s", zero)
	}
	n := 0
	for _, m := range framePTS(t, exp) {
		us := zero.Microseconds() + int64(math.Round(m*1e6))
		if !fed[us] && !fed[us-1] && !fed[us+1] {
			t.Errorf("export: a frame at media time %.6f s maps to PTS %d µs, which no unit had", m, us)
		}
		n++
	}
	if n < 40 {
		t.Errorf("the export holds %d frames, want 5 s or more at 10 fps", n)
	}
}
