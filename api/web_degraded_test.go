package api_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestWebDegradedStream: a live stream that inference cannot keep up with (RTP sent at 20× real
// time, 250 fps) is on the page as degraded with the share of frames not analysed (issue 29,
// item 4).
func TestWebDegradedStream(t *testing.T) {
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Skip("ffmpeg not installed (apt-get install ffmpeg)")
	}
	ctx := browser(t, 3*time.Minute)
	dir := t.TempDir()
	e := startWith(t, "", func(c *config.Config) {
		c.Sources.Degraded = config.Degraded{DropRatio: 0.3, Window: config.Duration(2 * time.Second)}
		c.Sources.AllowPaths = []string{dir} // the SDP file
	}, nil)
	clip := asset(t, "videos/car-detection.mp4")
	sdp := filepath.Join(dir, "stream.sdp")
	if out, err := exec.Command(ffmpeg, "-v", "error", "-i", clip, "-map", "0:v:0", "-c", "copy",
		"-frames:v", "1", "-f", "rtp", "-sdp_file", sdp, "rtp://127.0.0.1:9").CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg SDP: %v\n%s", err, out)
	}
	port := testutil.UDPPortPair(t)
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"cam","source":"rtp://127.0.0.1:%d?sdp=%s"}`, port, sdp), 201, nil)
	send := exec.Command(ffmpeg, "-v", "error", "-stream_loop", "-1", "-readrate", "20", "-i", clip, "-map", "0:v:0",
		"-c", "copy", "-f", "rtp", fmt.Sprintf("rtp://127.0.0.1:%d?pkt_size=1200", port))
	if err := send.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = send.Process.Kill(); _ = send.Wait() }()
	if err := chromedp.Do(ctx, watchCSP(), chromedp.Navigate(e.url+"/")); err != nil {
		t.Fatalf("page load: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => {
		const d = document.querySelector('.stream[data-stream="cam"] .dot.warn');
		return d && /^degraded: \d+% of frames not analysed over 2s/.test(d.title) ? d.title : '';
	})()`, chromedp.WithPollingTimeout(2*time.Minute)))
	if err != nil {
		t.Fatalf("the page never showed cam degraded: %v", err)
	}
	t.Logf("dot title: %s", title)
	shoot(t, ctx, "web-degraded.png")
	noCSPViolations(t, ctx)
}
