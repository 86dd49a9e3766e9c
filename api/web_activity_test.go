package api_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/config"
)

// TestWebActivity: in real headless Chromium, a gated stream's card shows its activity state
// (idle once its still scene has been still for idle_after), its gated frames and that it holds
// no decoder of its own (parked: docs/activity.md); a stream without gating shows none.
func TestWebActivity(t *testing.T) {
	ctx := browser(t, 3*time.Minute)
	clip := stillClip(t, 30)
	e := start(t, "")
	addStillAndPlain(t, e, clip)
	err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`.stream[data-stream="still"]`)),
		chromedp.WaitVisible(chromedp.CSS(`.stream[data-stream="plain"]`)),
	)
	if err != nil {
		t.Fatalf("page load: %v", err)
	}
	text, err := chromedp.Run(ctx, chromedp.Poll[string](`(() => {
		const a = document.querySelector('.stream[data-stream="still"] .act');
		return a && !a.hidden && a.dataset.state === 'idle' && / [1-9][0-9]* gated · no decoder$/.test(a.textContent) ? a.textContent : '';
	})()`, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil {
		shoot(t, ctx, "web-activity-failed.png")
		t.Fatalf("the gated stream's card never showed idle with gated frames and no decoder of its own: %v", err)
	}
	if !strings.HasPrefix(text, "idle · motion 0.0%") {
		t.Fatalf("card shows %q", text)
	}
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector('.stream[data-stream="plain"] .act').hidden`))
	if err != nil || !hidden {
		t.Fatalf("the plain stream's card shows an activity state (hidden %v, %v)", hidden, err)
	}
	shoot(t, ctx, "web-activity.png")
	noCSPViolations(t, ctx)
}

// TestWebMotionBoxes: the live view of a gated stream with motion outlines its motion regions
// (activity_state.motion_boxes) on the frame.
func TestWebMotionBoxes(t *testing.T) {
	ctx := browser(t, 3*time.Minute)
	clip := movingClip(t)
	e := start(t, "")
	if err := e.app.AddStream(config.Stream{ID: "moving", Source: clip, Model: "yolox", Loop: true, Realtime: true,
		Activity: &config.Activity{Mode: config.ActivityGate}}); err != nil {
		t.Fatal(err)
	}
	err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`.stream[data-stream="moving"]`)),
		chromedp.Click(chromedp.CSS(`.stream[data-stream="moving"]`)),
	)
	if err != nil {
		t.Fatalf("page load: %v", err)
	}
	n, err := chromedp.Run(ctx, chromedp.Poll[int](`+(document.querySelector('#canvas').dataset.motion || 0)`,
		chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(100*time.Millisecond)))
	if err != nil || n == 0 {
		shoot(t, ctx, "web-motion-failed.png")
		t.Fatalf("no motion box drawn: %d, %v", n, err)
	}
	shoot(t, ctx, "web-motion.png")
	noCSPViolations(t, ctx)
}
