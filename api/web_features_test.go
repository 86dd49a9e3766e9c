package api_test

import (
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestWebPollsOnlyItsFeatures: on a node with neither a cluster nor a GB28181 platform, GET /api
// says so and the page never asks /api/cluster or /api/gb28181/devices (it polled both every
// 2 s, filling the console with 404s: issue 29, item 8d).
func TestWebPollsOnlyItsFeatures(t *testing.T) {
	ctx := browser(t, 2*time.Minute)
	e := start(t, "")
	var idx struct {
		Features map[string]bool `json:"features"`
	}
	e.want("GET", "/api", "", 200, &idx)
	if f := idx.Features; f == nil || f["cluster"] || f["gb28181"] {
		t.Fatalf("GET /api features = %v, want cluster and gb28181 false", idx.Features)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/")); err != nil {
		t.Fatalf("page load: %v", err)
	}
	// Once the page has polled the stream list four times (every second), the cluster and
	// GB28181 panels would have asked their routes at load and every 2 s since.
	asked, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(() => {
		const urls = performance.getEntriesByType('resource').map(e => new URL(e.name).pathname);
		return urls.filter(u => u === '/api/streams').length >= 4 ? urls.filter(u => u.startsWith('/api/cluster') || u.startsWith('/api/gb28181')).concat(['done']) : null;
	})()`, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
	if err != nil {
		t.Fatalf("the page never polled the stream list: %v", err)
	}
	if len(asked) != 1 {
		t.Fatalf("the page asked routes the node lacks: %v", asked[:len(asked)-1])
	}
}
