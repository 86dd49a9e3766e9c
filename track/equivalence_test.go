package track

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// jsonNum reads a number written as a JSON number or a string, as ByteTrack-cpp's files mix both.
type jsonNum float64

func (n *jsonNum) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := strconv.ParseFloat(s, 64)
		*n = jsonNum(v)
		return err
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*n = jsonNum(v)
	return err
}

type bytetrackFile struct {
	FPS         jsonNum `json:"fps"`
	TrackBuffer jsonNum `json:"track_buffer"`
	Results     []struct {
		Frame   jsonNum `json:"frame_id"`
		TrackID jsonNum `json:"track_id"`
		Prob    jsonNum `json:"prob"`
		X       jsonNum `json:"x"`
		Y       jsonNum `json:"y"`
		W       jsonNum `json:"width"`
		H       jsonNum `json:"height"`
	} `json:"results"`
}

func readBytetrack(t *testing.T, path string) *bytetrackFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f bytetrackFile
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &f
}

// TestByteTrackEquivalence runs the tracker on the YOLOX detections of ByteTrack-cpp's palace clip
// with the reference's parameters and compares with the original's output: per frame the same
// number of tracks, the same identities up to a consistent renumbering, x, y, w, h within 1e-2.
func TestByteTrackEquivalence(t *testing.T) {
	dir := assetPath(t, "tracking/bytetrack_palace")
	dets := readBytetrack(t, filepath.Join(dir, "detection_results.json"))
	ref := readBytetrack(t, filepath.Join(dir, "tracking_results.json"))
	fps := float64(dets.FPS)
	if fps != 30 || dets.TrackBuffer != 30 {
		t.Fatalf("fps %v, track buffer %v: want 30, 30 (MANIFEST §5.1)", fps, dets.TrackBuffer)
	}

	type box struct {
		id         int64
		x, y, w, h float64
	}
	nframes := 0
	byFrame := map[int][]Detection{}
	for _, r := range dets.Results {
		f := int(r.Frame)
		// ByteTrack-cpp stores x, y, width, height as float and forms x2, y2 in float.
		x, y := float32(r.X), float32(r.Y)
		byFrame[f] = append(byFrame[f], Detection{
			Box:   [4]float32{x, y, x + float32(r.W), y + float32(r.H)},
			Score: float32(r.Prob),
		})
		nframes = max(nframes, f+1)
	}
	want := map[int][]box{}
	for _, r := range ref.Results {
		f := int(r.Frame)
		want[f] = append(want[f], box{int64(r.TrackID), float64(r.X), float64(r.Y), float64(r.W), float64(r.H)})
		nframes = max(nframes, f+1)
	}

	tr := Tracker{
		TrackThresh: 0.5, NewTrackThresh: 0.6, MatchThresh: 0.8, LowMatchThresh: 0.5,
		UnconfirmedMatchThresh: 0.7, DuplicateThresh: 0.15, FrameRate: fps,
		TrackBuffer:  time.Duration(float64(dets.TrackBuffer) / 30 * float64(time.Second)),
		LowThresh:    1e-9, // ByteTrack-cpp keeps every detection below TrackThresh as low
		matchLastBox: true,
	}
	if err := tr.Init(); err != nil {
		t.Fatal(err)
	}
	toRef, toOurs := map[int64]int64{}, map[int64]int64{}
	var out []Track
	total := 0
	for f := range nframes {
		pts := time.Duration(math.Round(float64(f) * float64(time.Second) / fps))
		var err error
		out, err = tr.Update(pts, byFrame[f], out[:0])
		if err != nil {
			t.Fatal(err)
		}
		exp := want[f]
		if len(out) != len(exp) {
			t.Fatalf("frame %d: %d tracks, reference %d", f, len(out), len(exp))
		}
		close := func(o Track, b box) bool {
			x, y := float64(o.Box[0]), float64(o.Box[1])
			w, h := float64(o.Box[2])-x, float64(o.Box[3])-y
			return math.Abs(x-b.x) <= 1e-2 && math.Abs(y-b.y) <= 1e-2 && math.Abs(w-b.w) <= 1e-2 && math.Abs(h-b.h) <= 1e-2
		}
		for _, o := range out {
			if rid, ok := toRef[o.TrackID]; ok {
				found := false
				for _, b := range exp {
					if b.id == rid {
						found = true
						if !close(o, b) {
							t.Fatalf("frame %d: track %d (reference %d) box %v, reference x,y,w,h %v", f, o.TrackID, rid, o.Box, b)
						}
					}
				}
				if !found {
					t.Fatalf("frame %d: track %d maps to reference %d, which is not in this frame", f, o.TrackID, rid)
				}
				continue
			}
			matched := false
			for _, b := range exp {
				if _, taken := toOurs[b.id]; !taken && close(o, b) {
					toRef[o.TrackID], toOurs[b.id] = b.id, o.TrackID
					matched = true
					break
				}
			}
			if !matched {
				t.Fatalf("frame %d: new track %d box %v matches no new reference track %v", f, o.TrackID, o.Box, exp)
			}
		}
		total += len(out)
	}
	if total != len(ref.Results) || len(toRef) != 42 {
		t.Fatalf("%d boxes in %d tracks, reference %d boxes in 42 tracks", total, len(toRef), len(ref.Results))
	}
}
