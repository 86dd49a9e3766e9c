package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunExitsNonZeroOnFailedStreams: 3 of 4 file streams failing ended with exit status 0 and
// the failed ones missing from the summary (issue 14, item 10).
func TestRunExitsNonZeroOnFailedStreams(t *testing.T) {
	a := assets(t)
	dir := t.TempDir()
	cfg := `models: [{name: yolox, path: ` + filepath.Join(a, "models/yolox_nano_416.onnx") + `}]
streams:
  - {id: good, source: ` + filepath.Join(a, "videos/car-detection.mp4") + `, model: yolox, interval: 20}
  - {id: missing1, source: nope1.mp4, model: yolox}
  - {id: missing2, source: nope2.mp4, model: yolox}
  - {id: missing3, source: nope3.mp4, model: yolox}
output: {jsonl: none, http: none}
`
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := vinfer(t, "run", "--config", path, "--http", "none")
	if code == 0 {
		t.Fatalf("exit status 0 with 3 of 4 streams failed:\n%s", stderr)
	}
	for _, id := range []string{"good", "missing1", "missing2", "missing3"} {
		if !strings.Contains(stderr[strings.Index(stderr, "summary:"):], id) {
			t.Errorf("summary lacks %s:\n%s", id, stderr)
		}
	}
	if !strings.Contains(stderr, "3 of 4 streams failed") {
		t.Errorf("no failure line:\n%s", stderr)
	}
}
