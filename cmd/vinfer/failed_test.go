package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestFailedStreamListedAndRetried: a configured RTP stream whose port another process holds
// vanished from /api/streams, /metrics and /readyz, leaving one log line (issue 29, item 3). It
// stays listed as failed with its reason and retry schedule; /readyz stays ready (models loaded,
// API serving) while /readyz?streams=all is not; once the port is free the retry starts it, and
// frames sent to it are inferred. A stream whose file is missing stays failed, in the summary too.
func TestFailedStreamListedAndRetried(t *testing.T) {
	a := assets(t)
	port := testutil.UDPPortPair(t)
	held, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	p := startRun(t, `models: [{name: yolox, path: `+filepath.Join(a, "models/yolox_nano_416.onnx")+`}]
sources: {retry: {initial: 100ms, max: 400ms}}
streams:
  - {id: cam, source: "rtp://127.0.0.1:`+fmt.Sprint(port)+`?codec=h264", model: yolox}
  - {id: gone, source: `+filepath.Join(t.TempDir(), "nope.mp4")+`, model: yolox}
output: {jsonl: none}
`)
	type view struct {
		ID    string `json:"id"`
		State string `json:"state"`
		Error string `json:"error"`
		Retry *struct {
			Attempts    int        `json:"attempts"`
			NextAttempt *time.Time `json:"next_attempt"`
		} `json:"retry"`
		Inferred int64 `json:"inferred"`
	}
	streams := func() map[string]view {
		var r struct{ Streams []view }
		p.getJSON("/api/streams", &r)
		m := map[string]view{}
		for _, v := range r.Streams {
			m[v.ID] = v
		}
		return m
	}
	var cam view
	testutil.Eventually(t, time.Minute, "cam listed as failed, retried twice", func() bool {
		cam = streams()["cam"]
		return cam.State == "failed" && cam.Retry != nil && cam.Retry.Attempts >= 2
	})
	if !strings.Contains(cam.Error, "address already in use") || cam.Retry.NextAttempt == nil {
		t.Errorf("cam: error %q, retry %+v: want the port's error and the next attempt", cam.Error, cam.Retry)
	}
	if g := streams()["gone"]; g.State != "failed" || !strings.Contains(g.Error, "nope.mp4") {
		t.Errorf("gone: %+v, want failed naming the file", g)
	}
	var ready struct {
		Ready  bool
		Failed []string
	}
	if code := p.getJSON("/readyz", &ready); code != 200 || !ready.Ready || len(ready.Failed) != 2 {
		t.Errorf("/readyz: %d %+v, want 200, ready, both streams under failed", code, ready)
	}
	if code := p.getJSON("/readyz?streams=all", &ready); code != 503 || ready.Ready {
		t.Errorf("/readyz?streams=all: %d %+v, want 503 (streams failed)", code, ready)
	}
	if code, b := p.get("/readyz?streams=some"); code != 400 {
		t.Errorf("/readyz?streams=some: %d %s, want 400", code, b)
	}
	_, m := p.get("/metrics")
	for _, want := range []string{`vinfer_stream_state{state="failed",stream="cam"} 1`, `vinfer_streams{state="failed"} 2`,
		`vinfer_stream_start_attempts{stream="cam"} `} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}

	// The port is freed: the next attempt opens the source, and what is sent is inferred.
	held.Close()
	testutil.Eventually(t, time.Minute, "cam started by a retry", func() bool {
		cam = streams()["cam"]
		return cam.State != "failed"
	})
	if cam.Retry != nil || cam.Error != "" {
		t.Errorf("cam after its start: %+v", cam)
	}
	send := startSend(t, filepath.Join(a, "videos/car-detection.mp4"), fmt.Sprintf("rtp://127.0.0.1:%d", port))
	testutil.Eventually(t, 2*time.Minute, "frames of cam inferred", func() bool {
		cam = streams()["cam"]
		return cam.State == "running" && cam.Inferred > 0
	})
	send()
	if code := p.stop(); code == 0 {
		t.Errorf("exit status 0 with a stream failed")
	}
	if l := p.summaryLine("gone"); !strings.Contains(l, "failed") || !strings.Contains(l, "attempt(s), retried every 100ms up to 400ms") {
		t.Errorf("summary line of gone: %q\n%s", l, p.logs.String())
	}
	if l := p.summaryLine("cam"); strings.Contains(l, "failed") || strings.Contains(l, "error") {
		t.Errorf("summary line of cam: %q", l)
	}
}
