package api_test

import (
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestWebReviewToken: the review page against a token-protected API, opened in a fresh tab
// with no token: it shows the token form; a wrong token is refused, the form saying so; the
// right one lists the stream's recordings on the timeline. The token is kept in the tab's
// sessionStorage, never localStorage, and goes to the API as Authorization: Bearer.
func TestWebReviewToken(t *testing.T) {
	const token = "review-token-form-0123"
	clip := testutil.ShortClip(t, "videos/car-detection.mp4", 24)
	dir := t.TempDir()
	ctx := browser(t, 3*time.Minute)
	e := startWith(t, token, func(c *config.Config) {
		c.Record = &config.Record{Dir: filepath.Join(dir, "rec"), Segment: config.Duration(4 * time.Second)}
	}, nil)
	from := time.Now().Add(-time.Second)
	if err := e.app.AddStream(config.Stream{ID: "cam1", Source: clip, Model: "yolox", Record: true}); err != nil {
		t.Fatal(err)
	}
	q := "start=" + url.QueryEscape(from.UTC().Format(time.RFC3339Nano)) + "&end=" +
		url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano))
	var list struct{ Segments []struct{ Open bool } }
	testutil.Eventually(t, 2*time.Minute, "the clip is recorded", func() bool {
		e.want("GET", "/api/streams/cam1/recordings?"+q, "", 200, &list)
		return len(list.Segments) >= 1 && !list.Segments[0].Open
	})

	if err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/review.html?stream=cam1"),
	); err != nil {
		t.Fatalf("page load: %v", err)
	}
	poll[bool](t, ctx, "review-token-needed", `!!document.querySelector('#token-dialog[open][data-state="needed"] #token-input')`, time.Minute)
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.rv-span').length`)); err != nil || n != 0 {
		t.Fatalf("%d recorded spans shown before the token (%v)", n, err)
	}
	shoot(t, ctx, "web-review-token-prompt.png")

	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token-input`), "wrong-token-0123456789"),
		chromedp.Click(chromedp.CSS(`#token-form button`)),
	); err != nil {
		t.Fatal(err)
	}
	poll[bool](t, ctx, "review-token-refused", `!!document.querySelector('#token-dialog[open][data-state="refused"]') &&
		document.querySelector('#token-why').textContent.includes('refused')`, time.Minute)
	shoot(t, ctx, "web-review-token-refused.png")

	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token-input`), token),
		chromedp.Click(chromedp.CSS(`#token-form button`)),
	); err != nil {
		t.Fatal(err)
	}
	poll[bool](t, ctx, "review-token-list", `document.querySelectorAll('.rv-span').length >= 1 && !document.querySelector('#token-dialog[open]')`, time.Minute)
	kept := poll[[]string](t, ctx, "review-token-kept", `[sessionStorage.getItem('vinfer.token') || '', localStorage.getItem('vinfer.token') || '']`, 10*time.Second)
	if kept[0] != token || kept[1] != "" {
		t.Fatalf("token kept as session %q, local %q; want the token in sessionStorage only", kept[0], kept[1])
	}
	shoot(t, ctx, "web-review-token.png")
	noCSPViolations(t, ctx)
}

// TestWebPagesAskToken: the evidence and live video pages, opened with no token against a
// token-protected API, show the same token form (request.js) and, with the token, stop asking;
// the token entered on one page serves the next in the tab.
func TestWebPagesAskToken(t *testing.T) {
	const token = "pages-token-form-0123"
	ctx := browser(t, 2*time.Minute)
	e := startWith(t, token, nil, nil)
	if err := chromedp.Do(ctx, watchCSP(), chromedp.Navigate(e.url+"/evidence.html")); err != nil {
		t.Fatal(err)
	}
	poll[bool](t, ctx, "evidence-token-needed", `!!document.querySelector('#token-dialog[open][data-state="needed"] #token-input')`, time.Minute)
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token-input`), token),
		chromedp.Click(chromedp.CSS(`#token-form button`)),
	); err != nil {
		t.Fatal(err)
	}
	// No evidence section on this server: 404 after the token, no form again.
	poll[bool](t, ctx, "evidence-token-used", `!document.querySelector('#token-dialog[open]') &&
		!/token/.test(document.querySelector('#ev-status span').textContent) && document.querySelector('#ev-status span').textContent !== ''`, time.Minute)
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/video.html?stream=cam9")); err != nil {
		t.Fatal(err)
	}
	// The stream is not running: the page's WHEP offer, sent with the tab's token, gets 404.
	poll[bool](t, ctx, "video-token-kept", `document.querySelector('#lv-status span').textContent === '404'`, time.Minute)
	if open, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!document.querySelector('#token-dialog[open]')`)); err != nil || open {
		t.Fatalf("the video page asked again for the token the tab holds (%v)", err)
	}
	// A fresh tab state: no token held, the video page asks with the same form.
	if err := chromedp.Do(ctx,
		ignore(chromedp.Evaluate[bool](`sessionStorage.clear(), true`)),
		chromedp.Navigate(e.url+"/video.html?stream=cam9"),
	); err != nil {
		t.Fatal(err)
	}
	poll[bool](t, ctx, "video-token-needed", `!!document.querySelector('#token-dialog[open][data-state="needed"] #token-input')`, time.Minute)
	noCSPViolations(t, ctx)
}
