package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/onvif/onvifsim"
)

// TestWebCameras drives the ONVIF cameras panel in headless Chromium against a simulated
// camera: "Find" with the responder's address lists it, "Profiles" with the user and password
// lists its profile, "Use" fills the Add stream form with the onvif:// source (no stream is
// added by that), and submitting the form adds a stream that plays the camera.
func TestWebCameras(t *testing.T) {
	const pass = "web-Pa55"
	ctx := browser(t, 3*time.Minute)
	cam := onvifsim.StartCamera(t, sourcetest.LoadClip(t, "videos/one-by-one-person-detection.mp4"), "admin", pass)
	d := &onvifsim.Device{User: "admin", Password: pass, Name: "Lobby", RTSPAddr: cam.Addr(),
		Profiles: []onvifsim.Profile{{Token: "prof_main", Name: "main", Width: 768, Height: 432, Path: "main"}}}
	d.Start(t)
	r := d.Discover(t, false)
	e := start(t, "")
	if err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#cameras`)),
		chromedp.SetValue(chromedp.CSS(`#cam-target`), r.Addr()),
	); err != nil {
		t.Fatalf("page load: %v", err)
	}
	// UDP: find again until the answer came.
	testutil.Eventually(t, time.Minute, "the camera listed", func() bool {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#cam-find-btn`))); err != nil {
			t.Fatal(err)
		}
		v, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => { const b = document.querySelector('#cam-find-btn'); return !b.disabled; })()`,
			chromedp.WithPollingTimeout(30*time.Second)))
		return err == nil && v && len(mustRun[[]string](t, ctx, `[...document.querySelectorAll('.cam .cam-name')].map(e => e.textContent)`)) == 1
	})
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`.cam .cam-user`), "admin"),
		chromedp.SetValue(chromedp.CSS(`.cam .cam-pass`), pass),
		chromedp.Click(chromedp.CSS(`.cam .cam-profiles-btn`)),
	); err != nil {
		t.Fatal(err)
	}
	poll[bool](t, ctx, "profile", `!!document.querySelector('.cam-profile[data-token="prof_main"] .cam-use')`, 30*time.Second)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.cam-profile[data-token="prof_main"] .cam-use`))); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("onvif://admin:%s@%s/prof_main", pass, d.Addr())
	if got := mustRun[string](t, ctx, `document.querySelector('#add-form').elements.source.value`); got != want {
		t.Fatalf("source filled in %q, want %q", got, want)
	}
	var list struct{ Streams []any }
	e.want("GET", "/api/streams", "", http.StatusOK, &list)
	if len(list.Streams) != 0 {
		t.Fatalf("a stream was added before the form was submitted: %v", list.Streams)
	}
	shoot(t, ctx, "web-cameras.png")
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#add-btn`))); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 90*time.Second, "the camera's stream inferring", func() bool {
		var st struct{ Inferred int64 }
		resp, _ := e.do("GET", "/api/streams/Lobby-prof_main", "")
		if resp.StatusCode != http.StatusOK {
			return false
		}
		e.want("GET", "/api/streams/Lobby-prof_main", "", http.StatusOK, &st)
		return st.Inferred > 0
	})
	noCSPViolations(t, ctx)
}

func mustRun[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatal(err)
	}
	return v
}
