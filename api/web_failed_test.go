package api_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestWebFailedStream: a configured stream whose RTP port another process holds is on the page
// as failed, with the reason and its retry (issue 29, item 3), and starts once the port is free.
func TestWebFailedStream(t *testing.T) {
	ctx := browser(t, 2*time.Minute)
	e := startWith(t, "", func(c *config.Config) {
		c.Sources.Retry = config.Retry{Initial: config.Duration(200 * time.Millisecond), Max: config.Duration(time.Second)}
	}, nil)
	port := testutil.UDPPortPair(t)
	held, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	// As `vinfer run` starts the configuration's streams.
	if err := e.app.StartStream(config.Stream{ID: "cam", Source: fmt.Sprintf("rtp://127.0.0.1:%d?codec=h264", port), Model: "yolox"}); err == nil {
		t.Fatal("the stream started on a port another process holds")
	}
	if err := chromedp.Do(ctx, watchCSP(), chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`.stream[data-stream="cam"] .dot.bad`))); err != nil {
		t.Fatalf("page load: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => {
		const t = document.querySelector('.stream[data-stream="cam"] .dot').title;
		return /^failed: .*address already in use.*\(attempt \d+ failed, next at /.test(t) ? t : '';
	})()`, chromedp.WithPollingTimeout(60*time.Second)))
	if err != nil {
		t.Fatalf("the failed stream's dot does not tell the reason and the retry: %v", err)
	}
	t.Logf("dot title: %s", title)
	shoot(t, ctx, "web-failed.png")
	held.Close()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`.stream[data-stream="cam"] .dot.warn`))); err != nil {
		t.Fatalf("the stream never started once the port was free: %v", err)
	}
	noCSPViolations(t, ctx)
}
