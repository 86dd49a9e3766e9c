package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPortInUseLeavesNothing: with --http on a port another process holds, vinfer run exits
// with the listen error before it starts anything, so a stream with recording on leaves no
// segment and no results log behind (a newcomer found a 1 ms segment listed afterwards).
func TestPortInUseLeavesNothing(t *testing.T) {
	a := assets(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec")
	cfg := `models: [{name: yolox, path: ` + filepath.Join(a, "models/yolox_nano_416.onnx") + `}]
streams: [{id: cam, source: ` + filepath.Join(a, "videos/car-detection.mp4") + `, model: yolox, record: true}]
record: {dir: ` + rec + `}
output: {jsonl: none}
`
	path := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := vinfer(t, "run", "--config", path, "--http", ln.Addr().String())
	if code == 0 || !strings.Contains(stderr, "address already in use") {
		t.Fatalf("exit status %d, want the listen error:\n%s", code, stderr)
	}
	var files []string
	filepath.WalkDir(rec, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	if len(files) > 0 {
		t.Errorf("a run that could not start left %v", files)
	}
}
