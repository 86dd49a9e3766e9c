package main

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// reidRun runs YOLOX with the bundled person re-identification model as its cascade on 19 s of
// the office clip (17–36 s: one person leaves at about 2 s, the next walks in at 6 s) with the
// whole picture blacked out from 13 s to 17 s, every third frame inferred; tracker is the
// stream's tracker setting. It returns the person track ids seen per second and the lines.
func reidRun(t *testing.T, clip, tracker string) (map[int][]int64, []string) {
	t.Helper()
	a := assets(t)
	cfg := `models:
  - {name: yolox, path: ` + filepath.Join(a, "models/yolox_nano_416.onnx") + `, cascade: [{model: reid, classes: [person], min_size: 32}]}
  - {name: reid, kind: embedding, path: ` + filepath.Join(a, "models/person-reidentification-retail-0288.onnx") + `}
streams:
  - {id: office, source: ` + clip + `, model: yolox, interval: 3, track_events: true, tracker: ` + tracker + `}
output: {http: none}
`
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := vinfer(t, "run", "--config", path, "--all-frames")
	if code != 0 {
		t.Fatalf("exit status %d:\n%s", code, stderr)
	}
	ids := map[int][]int64{}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var l struct {
			End        bool    `json:"end"`
			PTS        float64 `json:"pts"`
			Detections []struct {
				Label   string `json:"label"`
				TrackID int64  `json:"track_id"`
			} `json:"detections"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		for _, d := range l.Detections {
			if d.Label == "person" && d.TrackID > 0 && !l.End {
				s := int(l.PTS)
				if len(ids[s]) == 0 || ids[s][len(ids[s])-1] != d.TrackID {
					ids[s] = append(ids[s], d.TrackID)
				}
			}
		}
	}
	return ids, lines
}

// occludedClip cuts the office clip and blacks out 13–17 s.
func occludedClip(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "office.mp4")
	cmd := exec.Command("ffmpeg", "-nostdin", "-v", "error", "-y", "-ss", "17", "-t", "19",
		"-i", filepath.Join(assets(t), "videos/one-by-one-person-detection.mp4"),
		"-vf", "drawbox=enable='between(t,13,17)':x=0:y=0:w=iw:h=ih:color=black:t=fill",
		"-an", "-c:v", "libx264", "-preset", "veryfast", "-crf", "20", "-g", "20", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, b)
	}
	return out
}

// TestRunReID: a person hidden for 4 s (longer than the tracker's 1 s buffer) comes back with
// the same track id with tracker.reid on, and with a new one without it; the person before
// (gone 4 s before the next walks in) is not merged with the next; track.end carries a unit
// embedding when asked.
func TestRunReID(t *testing.T) {
	clip := occludedClip(t)
	for _, tc := range []struct {
		tracker string
		same    bool
	}{{"{reid: {embedding_on_end: true}}", true}, {"{}", false}} {
		ids, lines := reidRun(t, clip, tc.tracker)
		t.Logf("tracker %s: ids per second %v", tc.tracker, ids)
		first, before, after := ids[1], ids[12], ids[18]
		if len(first) != 1 || len(before) != 1 || len(after) != 1 {
			t.Fatalf("tracker %s: person ids at 1 s %v, 12 s %v, 18 s %v; want one each", tc.tracker, first, before, after)
		}
		if first[0] == before[0] {
			t.Errorf("tracker %s: the person at 1 s and the next at 12 s share id %d", tc.tracker, first[0])
		}
		if (before[0] == after[0]) != tc.same {
			t.Errorf("tracker %s: id %d before the occlusion, %d after; want the same: %v", tc.tracker, before[0], after[0], tc.same)
		}
		var embeddings int
		for _, l := range lines {
			var v struct {
				Events []struct {
					Type      string    `json:"type"`
					Embedding []float64 `json:"embedding"`
				} `json:"events"`
			}
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatal(err)
			}
			for _, e := range v.Events {
				if e.Type != "track.end" || e.Embedding == nil {
					continue
				}
				var ss float64
				for _, x := range e.Embedding {
					ss += x * x
				}
				if len(e.Embedding) != 256 || math.Abs(ss-1) > 1e-3 {
					t.Errorf("track.end embedding of %d values, squared norm %v", len(e.Embedding), ss)
				}
				embeddings++
			}
		}
		if tc.same != (embeddings > 0) {
			t.Errorf("tracker %s: %d track.end events with an embedding", tc.tracker, embeddings)
		}
	}
}
