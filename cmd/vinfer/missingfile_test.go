package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMissingFileNoRetryPromise: `vinfer run --http none` whose only stream is a missing file
// printed "… (retrying in 1s)" and then exited 1: nothing could retry it (no API, no live
// source). It exits non-zero with an error naming the file and promises no retry.
func TestMissingFileNoRetryPromise(t *testing.T) {
	a := assets(t)
	missing := filepath.Join(t.TempDir(), "no-such-video.mp4")
	cfg := `models: [{name: yolox, path: ` + filepath.Join(a, "models/yolox_nano_416.onnx") + `}]
streams: [{id: cars, source: ` + missing + `, model: yolox}]
output: {jsonl: none}
`
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := vinfer(t, "run", "--config", path, "--http", "none")
	if code == 0 || strings.Contains(stderr, "retrying in") || !strings.Contains(stderr, missing) {
		t.Fatalf("exit status %d, want non-zero naming %s without a promise to retry:\n%s", code, missing, stderr)
	}
	if testing.Verbose() {
		t.Log(stderr)
	}
}
