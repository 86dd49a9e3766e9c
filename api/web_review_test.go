package api_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
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

// reviewFrame is a results-log line (and the page's reviewState.objects).
type reviewFrame struct {
	Frame   int
	PTS     float64
	Objects []struct {
		TrackID int64 `json:"track_id"`
		Label   string
		Score   float64
		Box     [4]float64
	}
}

// TestWebReview drives the review page (review.html) in headless Chromium with a token set: a
// recorded clip shows as spans on the stream's timeline; a click on the timeline loads that
// segment (range requests, ?access_token=) and play advances it; a deep link to a chosen
// frame's PTS shows that frame (the frame Chromium presents, requestVideoFrameCallback's media
// time plus the segment's zero_pts) with exactly the results log's boxes of that frame, drawn on
// the overlay; the next-frame button steps to the next logged frame.
func TestWebReview(t *testing.T) { reviewPage(t, false) }

// TestWebReviewCluster: the same through a cluster node that does not run the stream: the
// listing, the results and the segments' range requests are forwarded to the owner, and the
// owner's events are marked on the timeline (the node's evidence list merges the nodes').
func TestWebReviewCluster(t *testing.T) { reviewPage(t, true) }

func reviewPage(t *testing.T, viaCluster bool) {
	const token = "s3cret-review"
	clip := testutil.ShortClip(t, "videos/car-detection.mp4", 120) // two GOPs of 4.8 s
	dir := t.TempDir()
	ctx := browser(t, 5*time.Minute)
	e := startWith(t, token, func(c *config.Config) {
		c.Record = &config.Record{Dir: filepath.Join(dir, "rec"), Segment: config.Duration(4 * time.Second)}
		c.Evidence = &config.Evidence{Dir: filepath.Join(dir, "ev"), Pre: config.Duration(time.Second), Post: config.Duration(time.Second),
			Events: []string{"track.start"}}
	}, func(s *api.Server) { s.Evidence = s.App.(*app.App).Evidence() })
	from := time.Now().Add(-time.Second)
	if err := e.app.AddStream(config.Stream{ID: "cam1", Source: clip, Model: "yolox", Realtime: true, Record: true,
		Config: analytics.Config{TrackEvents: true}}); err != nil {
		t.Fatal(err)
	}
	q := "start=" + url.QueryEscape(from.UTC().Format(time.RFC3339Nano)) + "&end=" +
		url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano))
	var list struct {
		Segments []struct {
			Name    string
			ZeroPTS *float64 `json:"zero_pts"`
			Open    bool
		}
	}
	var frames []reviewFrame
	testutil.Eventually(t, 2*time.Minute, "the clip is recorded and its results logged", func() bool {
		st, _ := e.app.Stream("cam1")
		if !st.Ended {
			return false
		}
		_, b := e.do("GET", "/api/streams/cam1/results?"+q, "")
		frames = frames[:0]
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var f reviewFrame
			if json.Unmarshal(l, &f) == nil {
				frames = append(frames, f)
			}
		}
		e.want("GET", "/api/streams/cam1/recordings?"+q, "", 200, &list)
		return int64(len(frames)) == st.Counters.Inferred && len(list.Segments) >= 2 && !list.Segments[len(list.Segments)-1].Open
	})
	page := e.url
	if viaCluster {
		fc := &fakeCluster{streams: map[string]config.Stream{"cam1": {ID: "cam1", Model: "yolox"}}, otherURL: e.url}
		page = startWith(t, token, nil, func(s *api.Server) { s.Cluster = fc }).url
	}
	seg2 := list.Segments[1]
	if seg2.ZeroPTS == nil {
		t.Fatalf("segment %s lists no zero_pts", seg2.Name)
	}
	// The chosen frame: one with objects, a second into the second segment, with a next one.
	pick := -1
	for i, f := range frames[:len(frames)-1] {
		if f.PTS >= *seg2.ZeroPTS+1 && len(f.Objects) > 0 {
			pick = i
			break
		}
	}
	if pick < 0 {
		t.Fatal("no frame with objects in the second segment")
	}

	if err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(page+"/review.html"),
		ignore(chromedp.Evaluate[bool](`sessionStorage.setItem('vinfer.token', '`+token+`'), true`)),
		chromedp.Navigate(page+"/review.html?stream=cam1"),
		chromedp.WaitVisible(chromedp.CSS(`#rv-timeline`)),
	); err != nil {
		t.Fatalf("page load: %v", err)
	}
	poll[bool](t, ctx, "review-list", `window.reviewState.ready && document.querySelectorAll('.rv-span').length >= 2`, time.Minute)
	// A 15-minute window makes the spans wide enough to aim at; a click on the second segment.
	rect := poll[[]float64](t, ctx, "review-span", `(() => {
		const w = document.querySelector('#rv-window');
		if (w.value !== '900') { w.value = '900'; w.dispatchEvent(new Event('change')); return null; }
		const s = document.querySelector('#rv-timeline[data-window="900"] .rv-span[data-name="`+seg2.Name+`"]');
		if (!s) return null;
		window.scrollTo(0, 0);
		const r = s.getBoundingClientRect();
		return r.width > 0 ? [r.left + r.width / 2, r.top + r.height / 2] : null;
	})()`, time.Minute)
	if err := chromedp.Do(ctx, chromedp.MouseClickXY(rect[0], rect[1])); err != nil {
		t.Fatal(err)
	}
	poll[bool](t, ctx, "review-seek", `(() => {
		const v = document.querySelector('#rv-video');
		if (v.error) throw new Error('MediaError ' + v.error.code);
		return window.reviewState.segment === '`+seg2.Name+`' && v.readyState >= 2;
	})()`, time.Minute)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rv-play`))); err != nil {
		t.Fatal(err)
	}
	// Playing: a frame Chromium presents (requestVideoFrameCallback's media time) + zero_pts is
	// a logged frame's pts.
	started := poll[[]float64](t, ctx, "review-play", `(() => {
		const v = document.querySelector('#rv-video'), s = window.reviewState;
		return !v.paused && s.source === 'frame' && s.exact && s.media_time > 0.5 ? [v.currentTime, s.pts, s.frame] : null;
	})()`, time.Minute)
	t.Logf("playing %s: currentTime %.2f s, frame %v at pts %v with its results", seg2.Name, started[0], started[2], started[1])

	// The export links (the shown segment's range by default) answer the video and its results.
	links := poll[[]string](t, ctx, "review-exports", `(() => {
		const l = ['#rv-exp-mp4', '#rv-exp-jsonl', '#rv-exp-mot'].map((s) => document.querySelector(s).href);
		return l.every((h) => h.includes('start=')) ? l : null;
	})()`, 10*time.Second)
	for i, ct := range []string{"video/mp4", "application/jsonl", "text/csv"} {
		resp, err := http.Get(links[i])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != ct || len(b) == 0 {
			t.Errorf("export %s: %s %q, %d bytes", links[i], resp.Status, resp.Header.Get("Content-Type"), len(b))
		}
	}

	// The chosen frame by a deep link: the frame shown and its boxes.
	want := frames[pick]
	if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s/review.html?stream=cam1&pts=%v", page, want.PTS))); err != nil {
		t.Fatal(err)
	}
	checkFrame := func(step string, want reviewFrame) {
		t.Helper()
		got, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(`(() => {
			const s = window.reviewState;
			return s.frame === %d ? JSON.stringify(s) : '';
		})()`, want.Frame), chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(100*time.Millisecond)))
		if err != nil {
			st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.reviewState) + ' currentTime ' + document.querySelector('#rv-video').currentTime`))
			shoot(t, ctx, "web-review-"+step+"-failed.png")
			t.Fatalf("%s: frame %d (pts %.6f) not shown: %v; the page: %s", step, want.Frame, want.PTS, err, st)
		}
		var st struct {
			PTS       float64
			MediaTime float64 `json:"media_time"`
			Segment   string
			reviewFrame
		}
		if err := json.Unmarshal([]byte(got), &st); err != nil {
			t.Fatal(err)
		}
		st.Frame = want.Frame
		zero := math.NaN()
		for _, sg := range list.Segments {
			if sg.Name == st.Segment && sg.ZeroPTS != nil {
				zero = *sg.ZeroPTS
			}
		}
		if d := st.MediaTime + zero - want.PTS; !(d < 0.001 && d > -0.001) {
			t.Errorf("%s: the frame shown is at media time %.6f s of %s (zero %.6f s), the results log's frame %d at pts %.6f s",
				step, st.MediaTime, st.Segment, zero, want.Frame, want.PTS)
		}
		t.Logf("%s: frame %d of %s at media time %.4f s, %d objects", step, want.Frame, st.Segment, st.MediaTime, len(st.Objects))
		a, _ := json.Marshal(st.Objects)
		b, _ := json.Marshal(want.Objects)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the overlay has %s, the results log's frame %d %s", step, a, want.Frame, b)
		}
		if len(want.Objects) == 0 {
			return // nothing to draw (a frame a loaded machine inferred with no object)
		}
		// The first box's left edge is drawn on the overlay.
		drawn := poll[bool](t, ctx, step+"-drawn", `(() => {
			const c = document.querySelector('#rv-overlay'), v = document.querySelector('#rv-video');
			const o = window.reviewState.objects[0], dpr = window.devicePixelRatio || 1;
			const s = Math.min(c.clientWidth / v.videoWidth, c.clientHeight / v.videoHeight);
			const ox = (c.clientWidth - v.videoWidth * s) / 2, oy = (c.clientHeight - v.videoHeight * s) / 2;
			const x = Math.round((ox + o.box[0] * s) * dpr), y = Math.round((oy + (o.box[1] + o.box[3]) / 2 * s) * dpr);
			const d = c.getContext('2d').getImageData(x - 2, y, 5, 1).data;
			for (let i = 3; i < d.length; i += 4) if (d[i] > 0) return true;
			return false;
		})()`, 10*time.Second)
		if !drawn {
			t.Errorf("%s: no box drawn on the overlay", step)
		}
	}
	checkFrame("review-frame", want)
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rv-next`))); err != nil {
		t.Fatal(err)
	}
	checkFrame("review-next", frames[pick+1])

	// An event mark (the owner's evidence, merged into the cluster node's list): a click shows
	// the event's frame, by its PTS.
	{
		var ev struct {
			Items []struct {
				ID  string
				PTS float64
			}
		}
		e.want("GET", "/api/evidence?stream=cam1", "", 200, &ev)
		if len(ev.Items) == 0 {
			t.Fatal("no track.start event")
		}
		it := ev.Items[len(ev.Items)-1]
		var at reviewFrame
		for _, f := range frames {
			if d := f.PTS - it.PTS; d < 0.001 && d > -0.001 {
				at = f
			}
		}
		// Away from it first (two frames back), then the mark.
		for i := range 2 {
			if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#rv-prev`))); err != nil {
				t.Fatal(err)
			}
			checkFrame(fmt.Sprintf("review-prev%d", i+1), frames[pick-i])
		}
		poll[bool](t, ctx, "review-mark-shown", `!!document.querySelector('.rv-mark[data-id="`+it.ID+`"]')`, time.Minute)
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`.rv-mark[data-id="`+it.ID+`"]`))); err != nil {
			t.Fatal(err)
		}
		checkFrame("review-mark", at)
	}
	if v, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__csp`)); err == nil && len(v) > 0 {
		t.Errorf("content security policy violations: %v", v)
	}
	name := "web-review.png"
	if viaCluster {
		name = "web-review-cluster.png"
	}
	shoot(t, ctx, name)
}
