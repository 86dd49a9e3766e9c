package main

import (
	"net"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestSecondSignalEnds: a SIGTERM starts the drain, which waits on what is in flight (here a
// sink whose broker is down, drain_timeout 10m; under load, frames inferring at seconds each
// held it 30-54 s). The second SIGINT or SIGTERM was swallowed; one a second or more after the
// first ends the process at once (status 130), as the log line of the first says.
func TestSecondSignalEnds(t *testing.T) {
	a := assets(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String() // a broker that is not there
	ln.Close()
	p := startRun(t, `models: [{name: yolox, path: `+filepath.Join(a, "models/yolox_nano_416.onnx")+`}]
streams: [{id: cars, source: `+filepath.Join(a, "videos/car-detection.mp4")+`, model: yolox, loop: true}]
output:
  jsonl: none
  sinks:
    - {type: mqtt, url: "mqtt://`+down+`", carry: detections, drain_timeout: 10m, outbox: {dir: `+t.TempDir()+`}}
`)
	depth := regexp.MustCompile(`"depth": *[1-9]`)
	testutil.Eventually(t, 2*time.Minute, "records waiting in the outbox", func() bool {
		_, b := p.get("/api/sinks")
		return depth.Match(b)
	})
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	testutil.Eventually(t, 2*time.Minute, "the drain to start", func() bool {
		return regexp.MustCompile(`stopping: draining`).MatchString(p.logs.String())
	})
	// A burst within a second of the first stays one request: SIGINT every 200 ms until it ends.
	give := time.After(2 * time.Minute) // the drain itself waits 10 minutes
	for tick := time.NewTicker(200 * time.Millisecond); ; {
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
			if p.code != 130 {
				t.Fatalf("exit status %d, want 130 (ended by the second SIGINT)", p.code)
			}
			return
		case <-give:
			t.Fatalf("a second signal did not end vinfer run:\n%s", p.logs.String())
		case <-tick.C:
		}
	}
}
