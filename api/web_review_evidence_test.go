package api_test

import (
	"bytes"
	"encoding/json"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestWebEvidenceOverlay: on the evidence page, a recorded stream's event clip plays with the
// results log's boxes of the frame shown (the clip's media time + its start PTS), the same
// overlay as the review page's.
func TestWebEvidenceOverlay(t *testing.T) {
	const token = "s3cret-evidence-overlay"
	clip := testutil.ShortClip(t, "videos/car-detection.mp4", 120)
	dir := t.TempDir()
	ctx := browser(t, 5*time.Minute)
	e := startWith(t, token, func(c *config.Config) {
		c.Record = &config.Record{Dir: filepath.Join(dir, "rec"), Segment: config.Duration(4 * time.Second)}
		c.Evidence = &config.Evidence{Dir: filepath.Join(dir, "ev"), Pre: config.Duration(time.Second), Post: config.Duration(2 * time.Second),
			Events: []string{"track.start"}}
	}, func(s *api.Server) { s.Evidence = s.App.(*app.App).Evidence() })
	from := time.Now().Add(-time.Second)
	if err := e.app.AddStream(config.Stream{ID: "cam1", Source: clip, Model: "yolox", Realtime: true, Record: true,
		Config: analytics.Config{TrackEvents: true}}); err != nil {
		t.Fatal(err)
	}
	q := "start=" + url.QueryEscape(from.UTC().Format(time.RFC3339Nano)) + "&end=" +
		url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano))
	byFrame := map[int]reviewFrame{}
	testutil.Eventually(t, 2*time.Minute, "the clip's results are logged and an event clip written", func() bool {
		st, _ := e.app.Stream("cam1")
		if !st.Ended {
			return false
		}
		_, b := e.do("GET", "/api/streams/cam1/results?"+q, "")
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var f reviewFrame
			if json.Unmarshal(l, &f) == nil {
				byFrame[f.Frame] = f
			}
		}
		var ev struct {
			Items []struct {
				HasClip bool `json:"has_clip"`
			}
		}
		e.want("GET", "/api/evidence?stream=cam1", "", 200, &ev)
		return int64(len(byFrame)) == st.Counters.Inferred && len(ev.Items) > 0 && ev.Items[0].HasClip
	})
	if err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/evidence.html"),
		ignore(chromedp.Evaluate[bool](`sessionStorage.setItem('vinfer.token', '`+token+`'), true`)),
		chromedp.Navigate(e.url+"/evidence.html"),
	); err != nil {
		t.Fatalf("page load: %v", err)
	}
	id := poll[string](t, ctx, "evidence-card", `(() => {
		const c = document.querySelector('.ev-card[data-state="written"][data-stream="cam1"]');
		return c ? c.dataset.id : '';
	})()`, time.Minute)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.ev-card[data-id="`+id+`"]`))); err != nil {
		t.Fatal(err)
	}
	got := poll[string](t, ctx, "evidence-overlay", `(() => {
		const s = window.evidenceOverlay;
		return s.event === '`+id+`' && s.frame !== null && s.objects.length > 0 ? JSON.stringify(s) : '';
	})()`, time.Minute)
	var st struct {
		reviewFrame
		PTS float64
	}
	if err := json.Unmarshal([]byte(got), &st); err != nil {
		t.Fatal(err)
	}
	want, ok := byFrame[st.Frame]
	if !ok {
		t.Fatalf("the overlay shows frame %d, which the results log lacks", st.Frame)
	}
	if d := st.PTS - want.PTS; d > 0.001 || d < -0.001 {
		t.Errorf("the clip's frame at pts %.6f s shows the boxes of frame %d at %.6f s", st.PTS, want.Frame, want.PTS)
	}
	a, _ := json.Marshal(st.Objects)
	b, _ := json.Marshal(want.Objects)
	if !bytes.Equal(a, b) {
		t.Errorf("the overlay has %s, the results log's frame %d %s", a, want.Frame, b)
	}
	t.Logf("event %s: clip frame %d at pts %.3f s drawn with %d objects", id, st.Frame, st.PTS, len(st.Objects))
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp`)); err == nil && len(v) > 0 {
		t.Errorf("content security policy violations: %v", v)
	}
	shoot(t, ctx, "web-evidence-overlay.png")

}
