package api_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/internal/testutil/browsertest"
)

// browser starts headless Chromium with a 1440×900 window (browsertest.New) and returns its
// context.
func browser(t *testing.T, timeout time.Duration) context.Context {
	return browsertest.New(t, timeout, 1440, 900)
}

func browserSized(t *testing.T, timeout time.Duration, w, h int) context.Context {
	return browsertest.New(t, timeout, w, h)
}

// shoot saves a PNG screenshot of the viewport as a test artifact.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	artifact(t, name, png)
}

// boxPixels counts canvas pixels in the colors of the tracks drawn (the page's trackColor) by
// reading the canvas back: the boxes are really drawn, not only counted.
const boxPixels = `(() => {
  const c = document.querySelector('#canvas');
  const ids = c.dataset.tracks ? c.dataset.tracks.split(',').map(Number) : [];
  const cols = ids.map(id => { const n = parseInt(trackColor(id).slice(1), 16); return [n >> 16, (n >> 8) & 255, n & 255]; });
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 0; i < d.length; i += 4)
    if (cols.some(([r, g, b]) => Math.abs(d[i] - r) < 8 && Math.abs(d[i+1] - g) < 8 && Math.abs(d[i+2] - b) < 8)) n++;
  return n;
})()`

// TestWebPage loads the page in real headless Chromium: the stream list fills, the live view
// draws the office stream's frames with person boxes, and a stream added through the form starts
// and is shown. Screenshots go to out/test-artifacts/api (or $VINFER_TEST_ARTIFACTS).
func TestWebPage(t *testing.T) {
	ctx := browser(t, 3*time.Minute)
	e := start(t, "")
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"office","source":%q,"loop":true}`,
		asset(t, "videos/one-by-one-person-detection.mp4")), 201, nil)

	err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`.stream[data-stream="office"]`)),
	)
	if err != nil {
		t.Fatalf("page load: %v", err)
	}
	title, err := chromedp.Run(ctx, chromedp.Title())
	if err != nil {
		t.Fatal(err)
	}
	if title != "vinfer" {
		t.Fatalf("page title %q", title)
	}

	// The live view: a frame drawn with the boxes of its own result, a person among them.
	ok, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => {
		const c = document.querySelector('#canvas');
		return +c.dataset.boxes > 0 && c.dataset.resultFrame === c.dataset.frame &&
			[...document.querySelectorAll('#dets .tag')].some(t => t.textContent.startsWith('person'));
	})()`, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil || !ok {
		shoot(t, ctx, "web-live-failed.png")
		t.Fatalf("the live view never showed a frame with a person box: %v", err)
	}
	// (polled: a frame between two people may have no box)
	pixels, err := chromedp.Run(ctx, chromedp.Poll[int](`(() => { const n = `+boxPixels+`; return n >= 300 ? n : 0; })()`,
		chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		shoot(t, ctx, "web-boxes-failed.png")
		t.Fatalf("the canvas never had 300 pixels in the tracks' colors: boxes not drawn: %v", err)
	}
	t.Logf("%d pixels in the tracks' colors", pixels)
	time.Sleep(1500 * time.Millisecond) // let fps and thumbnails fill in for the screenshot
	shoot(t, ctx, "web-live.png")

	// Add a stream through the form.
	cars := asset(t, "videos/car-detection.mp4")
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#add-form input[name="id"]`), "cars"),
		chromedp.SendKeys(chromedp.CSS(`#add-form input[name="source"]`), cars),
		chromedp.Click(chromedp.CSS(`#add-form input[name="loop"]`)),
		chromedp.Click(chromedp.CSS(`#add-btn`)),
		chromedp.WaitVisible(chromedp.CSS(`.stream.sel[data-stream="cars"]`)),
		ignore(chromedp.Poll[bool](`document.querySelector('#view-title').textContent === 'cars' &&
			+document.querySelector('#canvas').dataset.frame >= 0`,
			chromedp.WithPollingTimeout(60*time.Second))),
	)
	if err != nil {
		shoot(t, ctx, "web-add-failed.png")
		t.Fatalf("adding a stream through the form: %v", err)
	}
	var v struct {
		Source string
		Loop   bool
		State  string
	}
	e.want("GET", "/api/streams/cars", "", 200, &v)
	if v.Source != cars || !v.Loop {
		t.Fatalf("the form added %+v", v)
	}
	time.Sleep(1500 * time.Millisecond)
	shoot(t, ctx, "web-added.png")

	// A bad submission shows the server's message under the form.
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#add-form input[name="id"]`), "cars"),
		chromedp.SendKeys(chromedp.CSS(`#add-form input[name="source"]`), "/nonexistent/clip.mp4"),
		chromedp.Click(chromedp.CSS(`#add-btn`)),
	)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := chromedp.Run(ctx, chromedp.Poll[string](`document.querySelector('#add-error').textContent`,
		chromedp.WithPollingTimeout(20*time.Second)))
	if err != nil || !strings.Contains(msg, "already exists") {
		t.Fatalf("form error: %q, %v", msg, err)
	}
	shoot(t, ctx, "web-form-error.png")
	noCSPViolations(t, ctx)
}

// TestWebPageToken: against a server with a token, the page asks for it, then works: the list
// fills over the API and the live view draws (its snapshots and events carry the token too).
// The window is narrower, for the two-column layout.
func TestWebPageToken(t *testing.T) {
	ctx := browserSized(t, 3*time.Minute, 1100, 820)
	e := start(t, token)
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"office","source":%q,"loop":true}`,
		asset(t, "videos/one-by-one-person-detection.mp4")), 201, nil)
	err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#token-dialog[open] #token-input`)),
	)
	if err != nil {
		t.Fatalf("no token prompt: %v", err)
	}
	shoot(t, ctx, "web-token-prompt.png")
	err = chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS(`#token-input`), token),
		chromedp.Click(chromedp.CSS(`#token-form button`)),
		chromedp.WaitVisible(chromedp.CSS(`.stream[data-stream="office"]`)),
		ignore(chromedp.Poll[bool](`+document.querySelector('#canvas').dataset.boxes > 0`,
			chromedp.WithPollingTimeout(90*time.Second))),
	)
	if err != nil {
		shoot(t, ctx, "web-token-failed.png")
		t.Fatalf("the page did not work with the token: %v", err)
	}
	time.Sleep(1500 * time.Millisecond)
	shoot(t, ctx, "web-token.png")
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	if err != nil {
		t.Fatal(err)
	}
	artifact(t, "web-token-full.png", png)
	noCSPViolations(t, ctx)
}

// watchCSP records, in every document the tab loads from now on, what the server's
// Content-Security-Policy blocked (securitypolicyviolation events), for cspViolations.
func watchCSP() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.__csp = [];
document.addEventListener('securitypolicyviolation', e => window.__csp.push(e.effectiveDirective + ' blocked ' + (e.blockedURI || 'inline') + ' at ' + e.sourceFile + ':' + e.lineNumber));`,
		})
		return err
	})
}

// noCSPViolations fails the test when the page's Content-Security-Policy blocked anything
// (watchCSP must have run before the page loaded).
func noCSPViolations(t *testing.T, ctx context.Context) {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp || ['watchCSP did not run']`))
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 0 {
		t.Fatalf("the Content-Security-Policy blocked parts of the page: %q", v)
	}
}

// ignore drops an action's value, for chromedp.Do.
func ignore[T any](a chromedp.Action[T]) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, t *chromedp.Target) (chromedp.Void, error) {
		_, err := a(ctx, t)
		return chromedp.Void{}, err
	}
}
