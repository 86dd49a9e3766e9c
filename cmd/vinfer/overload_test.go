package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
)

// TestOverloadDegraded: a live stream whose frames inference cannot keep up with dropped 74 %
// of them with nothing said but a counter (issue 29, item 4). An RTP stream sent at 20× real
// time (250 fps, several times what YOLOX-Nano infers on any CPU) goes degraded: in the API,
// /metrics and one log line; once the sender stops it runs again (one more line), and the
// summary says how much was not analysed.
func TestOverloadDegraded(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg not installed (apt-get install ffmpeg)")
	}
	a := assets(t)
	clip := filepath.Join(a, "videos/car-detection.mp4")
	sdp := filepath.Join(t.TempDir(), "stream.sdp")
	if out, err := exec.Command(ffmpeg, "-v", "error", "-i", clip, "-map", "0:v:0", "-c", "copy",
		"-frames:v", "1", "-f", "rtp", "-sdp_file", sdp, "rtp://127.0.0.1:9").CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg SDP: %v\n%s", err, out)
	}
	port := testutil.UDPPortPair(t)
	p := startRun(t, `models: [{name: yolox, path: `+filepath.Join(a, "models/yolox_nano_416.onnx")+`}]
sources: {degraded: {drop_ratio: 0.3, window: 2s}}
streams:
  - {id: cam, source: "rtp://127.0.0.1:`+fmt.Sprint(port)+`?sdp=`+sdp+`", model: yolox}
output: {jsonl: none}
`)
	send := exec.Command(ffmpeg, "-v", "error", "-stream_loop", "-1", "-readrate", "20", "-i", clip, "-map", "0:v:0",
		"-c", "copy", "-f", "rtp", fmt.Sprintf("rtp://127.0.0.1:%d?pkt_size=1200", port))
	if err := send.Start(); err != nil {
		t.Fatal(err)
	}
	sent := make(chan struct{})
	go func() { _ = send.Wait(); close(sent) }()
	stopSend := func() {
		select {
		case <-sent:
		default:
			_ = send.Process.Kill()
			<-sent
		}
	}
	defer stopSend()

	type view struct {
		State    string `json:"state"`
		Overload *struct {
			DropRatio     float64 `json:"drop_ratio"`
			DegradedCount int     `json:"degraded_count"`
		} `json:"overload"`
	}
	var v view
	testutil.Eventually(t, 2*time.Minute, "cam degraded", func() bool {
		p.getJSON("/api/streams/cam", &v)
		return v.State == "degraded"
	})
	if v.Overload == nil || v.Overload.DropRatio <= 0.3 || v.Overload.DegradedCount != 1 {
		t.Errorf("degraded cam's overload: %+v", v.Overload)
	}
	_, m := p.get("/metrics")
	for _, want := range []string{`vinfer_stream_state{state="degraded",stream="cam"} 1`, `vinfer_streams{state="degraded"} 1`} {
		if !strings.Contains(string(m), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var ready struct {
		Ready    bool
		Degraded []string
	}
	if code := p.getJSON("/readyz", &ready); code != 200 || len(ready.Degraded) != 1 {
		t.Errorf("/readyz: %d %+v, want ready, cam under degraded", code, ready)
	}

	stopSend()
	testutil.Eventually(t, 2*time.Minute, "cam running again", func() bool {
		p.getJSON("/api/streams/cam", &v)
		return v.State == "running"
	})
	p.stop()
	logs := p.logs.String()
	if n, m := strings.Count(logs, "stream degraded"), strings.Count(logs, "stream running again"); n != 1 || m != 1 {
		t.Errorf("%d degraded and %d running-again log lines, want one each:\n%s", n, m, logs)
	}
	l := p.summaryLine("cam")
	if !strings.Contains(l, "not analysed") || !strings.Contains(l, "degraded 1 time(s)") {
		t.Errorf("summary line of cam: %q, want what was not analysed and the time degraded", l)
	}
	t.Logf("summary: %s", l)
}
