package api_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
)

// TestWebEvidence drives the evidence page (evidence.html) in headless Chromium with a token
// set: the person clip with the exit line records its crossings; the page lists the first
// with its best-frame snapshot loaded as a thumbnail (768×432, through ?access_token=) and a
// mark on the stream's timeline; a click plays the clip in the page's video element, which
// loads it from /api/evidence (readyState ≥ 2, duration > 0) and whose currentTime advances.
func TestWebEvidence(t *testing.T) { evidencePage(t, false) }

// TestWebEvidenceCluster: the same through a cluster node that does not run the stream nor
// record evidence: the list, the snapshot (?boxes=1) and the clip come from the owner.
func TestWebEvidenceCluster(t *testing.T) { evidencePage(t, true) }

func evidencePage(t *testing.T, viaCluster bool) {
	const token = "s3cret-evidence"
	ctx := browser(t, 5*time.Minute)
	e := startWith(t, token, func(c *config.Config) {
		c.Evidence = &config.Evidence{Dir: t.TempDir(), Pre: config.Duration(3 * time.Second), Post: config.Duration(time.Second),
			Events: []string{"line.cross"}}
	}, func(s *api.Server) { s.Evidence = s.App.(*app.App).Evidence() })
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"office","source":%q,"lines":[%s]}`,
		asset(t, "videos/one-by-one-person-detection.mp4"), sceneLine), 201, nil)
	page := e.url
	if viaCluster {
		fc := &fakeCluster{streams: map[string]config.Stream{"office": {ID: "office", Model: "yolox"}}, otherURL: e.url}
		page = startWith(t, token, nil, func(s *api.Server) { s.Cluster = fc }).url
	}
	if err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(page+"/evidence.html"), // the token first: the live page would ask for it
		ignore(chromedp.Evaluate[bool](`sessionStorage.setItem('vinfer.token', '`+token+`'), true`)),
		chromedp.Navigate(page+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#nav-evidence`)),
		chromedp.Click(chromedp.CSS(`#nav-evidence`)),
		chromedp.WaitVisible(chromedp.CSS(`#ev-timeline`)),
	); err != nil {
		t.Fatalf("page load: %v", err)
	}

	// The first crossing (≈19 s into the clip) with its snapshot loaded, and its timeline mark.
	id := poll[string](t, ctx, "evidence-thumb", `(() => {
		const img = document.querySelector('.ev-card[data-state="written"][data-stream="office"] img.thumb');
		if (!img || !img.complete || img.naturalWidth !== 768 || img.naturalHeight !== 432) return '';
		const id = img.closest('.ev-card').dataset.id;
		return document.querySelector('.tl-row[data-stream="office"] .tl-mark[data-id="' + id + '"]') ? id : '';
	})()`, 150*time.Second)
	t.Logf("event %s shown with its snapshot", id)
	if viaCluster { // the card names the node that holds the event
		node := poll[string](t, ctx, "evidence-node", `document.querySelector('.ev-card[data-id="`+id+`"]').dataset.node`, time.Minute)
		if node != "other" {
			t.Errorf("the card names node %q, want other", node)
		}
	}

	// Play its clip.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.ev-card[data-id="`+id+`"]`))); err != nil {
		t.Fatal(err)
	}
	loaded := poll[[]float64](t, ctx, "evidence-video", `(() => {
		const v = document.querySelector('#ev-video');
		if (v.error) return [-1, v.error.code];
		if (v.dataset.event !== '`+id+`' || v.readyState < 2 || !(v.duration > 0)) return null;
		if (v.paused) v.play().catch(() => {});
		return [v.readyState, v.duration, v.currentTime];
	})()`, 60*time.Second)
	if loaded[0] < 0 {
		shoot(t, ctx, "web-evidence-video-failed.png")
		t.Fatalf("the video element failed to load the clip: MediaError code %v", loaded[1])
	}
	t.Logf("clip loaded: readyState %v, duration %.2f s, at %.2f s", loaded[0], loaded[1], loaded[2])
	played := poll[float64](t, ctx, "evidence-play", fmt.Sprintf(`(() => {
		const v = document.querySelector('#ev-video');
		if (v.paused) v.play().catch(() => {});
		return v.currentTime > %f + 0.5 ? v.currentTime : 0;
	})()`, loaded[2]), 60*time.Second)
	t.Logf("playing: currentTime %.2f s", played)
	if loaded[1] < 3 || loaded[1] > 6 {
		t.Errorf("clip duration %.2f s, want pre + post = 4 s (up to one GOP more)", loaded[1])
	}
	if hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`getComputedStyle(document.querySelector("#ev-video-empty")).display === "none"`)); err != nil || !hidden {
		t.Errorf("the placeholder still covers the playing video (%v)", err)
	}
	if viaCluster {
		shootFull(t, ctx, "web-evidence-cluster.png")
	} else {
		shootFull(t, ctx, "web-evidence.png")
	}
	noCSPViolations(t, ctx)
}
