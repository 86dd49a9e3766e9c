package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONLFramesOnce: with tracks alive at the end of a clip, the closing events came as a
// second line of the last frame, with empty detections (issue 29, item 8a). Every frame has
// one line; the closing events come in one end record without frame fields.
func TestJSONLFramesOnce(t *testing.T) {
	a := assets(t)
	dir := t.TempDir()
	cfg := `models: [{name: yolox, path: ` + filepath.Join(a, "models/yolox_nano_416.onnx") + `}]
streams:
  - {id: cars, source: ` + filepath.Join(a, "videos/person-bicycle-car-detection_reenc.mp4") + `, model: yolox, interval: 3, track_events: true}
output: {http: none}
`
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := vinfer(t, "run", "--config", path, "--all-frames")
	if code != 0 {
		t.Fatalf("exit status %d:\n%s", code, stderr)
	}
	seen := map[int64]int{}
	var ends, frames int
	var endEvents []string
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l struct {
			Source     string            `json:"source"`
			Frame      *int64            `json:"frame"`
			End        bool              `json:"end"`
			Detections []json.RawMessage `json:"detections"`
			Events     []struct {
				Type string `json:"type"`
			} `json:"events"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if l.End {
			ends++
			if l.Frame != nil || l.Detections != nil {
				t.Errorf("end record with frame fields: %s", sc.Text())
			}
			for _, e := range l.Events {
				endEvents = append(endEvents, e.Type)
			}
			continue
		}
		if l.Frame == nil {
			t.Fatalf("line without a frame: %s", sc.Text())
		}
		frames++
		if seen[*l.Frame]++; seen[*l.Frame] == 2 {
			t.Errorf("frame %d written twice; the second: %s", *l.Frame, sc.Text())
		}
	}
	if frames < 100 { // about 460 frames, every third inferred
		t.Errorf("%d frame lines, want every third frame's", frames)
	}
	if ends != 1 || len(endEvents) == 0 || endEvents[0] != "track.end" {
		t.Errorf("%d end records, their events %v: want one, with the track.end of the tracks alive at the end", ends, endEvents)
	}
}
