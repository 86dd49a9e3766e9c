package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestSIGINTStoppedNotEnded: a file stream stopped by SIGINT (the app stopping) showed state
// "ended" in the run summary as if the file had finished. It shows "stopped"; "ended" stays for
// a file that really ended.
func TestSIGINTStoppedNotEnded(t *testing.T) {
	a := assets(t)
	dir := t.TempDir()
	port := testutil.FreePort(t)
	cfg := filepath.Join(dir, "run.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `models: [{name: yolox, path: %s, intra_op_threads: 1}]
streams:
  - {id: loop, source: %s, model: yolox, loop: true}
output: {jsonl: none, http: "127.0.0.1:%d"}
`, filepath.Join(a, "models/yolox_nano_416.onnx"), filepath.Join(a, "videos/car-detection.mp4"), port), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--config", cfg)
	var stderr testutil.LogBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	done := false
	t.Cleanup(func() {
		if !done {
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("vinfer's stderr:\n%s", stderr.String())
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/api/streams/loop", port)
	testutil.Eventually(t, 2*time.Minute, "the stream inferring", func() bool {
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var v struct{ Inferred int64 }
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return v.Inferred > 0
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := testutil.Within(t, 2*time.Minute, "vinfer to stop", exited)
	done = true
	if err != nil {
		t.Fatalf("vinfer ended with %v", err)
	}
	var line string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[0] == "loop" && f[1] == "model" {
			line = l
		}
	}
	if f := strings.Fields(line); len(f) < 4 || f[3] != "stopped" {
		t.Fatalf("summary line %q: want state stopped", line)
	}
}
