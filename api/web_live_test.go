package api_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/internal/testutil"
)

// sseResults follows the stream's results over Server-Sent Events, from outside like any
// client, keyed by their PTS on the 90 kHz clock: what each frame's overlay must show.
type sseResults struct {
	mu   sync.Mutex
	byTS map[int64][][4]float64
}

func followResults(t *testing.T, e *env, stream string) *sseResults {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", e.url+"/api/events?stream="+stream, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.token != "" {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	s := &sseResults{byTS: map[int64][][4]float64{}}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var r struct {
				PTS        *float64 `json:"pts"`
				Detections []struct {
					Box [4]float64 `json:"box"`
				} `json:"detections"`
			}
			if json.Unmarshal([]byte(line), &r) != nil || r.PTS == nil {
				continue
			}
			boxes := [][4]float64{}
			for _, d := range r.Detections {
				boxes = append(boxes, d.Box)
			}
			s.mu.Lock()
			s.byTS[int64(math.Round(*r.PTS*90000))] = boxes
			s.mu.Unlock()
		}
	}()
	return s
}

// shownFrame is one frame the page presented, as it logs it (window.vinferLive.frames).
type shownFrame struct {
	TS       int64        `json:"ts"`
	ResultTS *int64       `json:"resultTs"`
	Boxes    [][4]float64 `json:"boxes"`
	ShownAt  float64      `json:"shownAt"`
}

// TestLiveVideoPage: the live page plays a stream's own video in headless Chromium, over WebRTC
// (a clip without B-frames) or as fragmented MP4 to Media Source Extensions (a clip with
// B-frames, which browsers drop over WebRTC), and draws over each frame shown the boxes of that
// frame's own result (matched by PTS, not the latest result): a frame with boxes, picked among
// those shown, has exactly the boxes the result of its PTS has over SSE. Before: no live page.
func TestLiveVideoPage(t *testing.T) {
	for _, c := range []struct{ name, clip, mode, scene string }{
		{"webrtc", "videos/car-detection.mp4", "webrtc", `,"zones":[{"name":"lot","polygon":[[10,10],[700,10],[700,400],[10,400]]}],"lines":[{"name":"gate","points":[[0,216],[768,216]]}]`},
		{"mse", "videos/one-by-one-person-detection.mp4", "mse", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := browser(t, 3*time.Minute)
			e := startLive(t, "", 4)
			e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"cam","source":%q,"loop":true,"realtime":true%s}`, asset(t, c.clip), c.scene), 201, nil)
			testutil.Eventually(t, 60*time.Second, "first inferred frames", func() bool { return inferred(e, "cam") > 10 })
			results := followResults(t, e, "cam")
			checkLivePage(t, ctx, e, results, c.mode)
		})
	}
}

func checkLivePage(t *testing.T, ctx context.Context, e *env, results *sseResults, mode string) {
	if err := chromedp.Do(ctx, watchCSP(), chromedp.Navigate(e.url+"/video.html?stream=cam")); err != nil {
		t.Fatal(err)
	}
	playing, err := chromedp.Run(ctx, chromedp.Poll[bool](`(() => {
		const v = document.querySelector('#lv-video');
		return window.vinferLive.mode === '`+mode+`' && v.readyState >= 2 && v.getVideoPlaybackQuality().totalVideoFrames > 10;
	})()`, chromedp.WithPollingTimeout(90*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
	if err != nil || !playing {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({mode: window.vinferLive.mode, note: window.vinferLive.note, status: document.querySelector('#lv-status').textContent, frames: window.vinferLive.frames.length})`))
		t.Fatalf("video not playing as %s: %v: %s", mode, err, state)
	}
	// A frame shown with boxes of its own result.
	var chosen shownFrame
	testutil.Eventually(t, 60*time.Second, "a frame shown with its own result's boxes", func() bool {
		frames, err := chromedp.Run(ctx, chromedp.Evaluate[[]shownFrame](`window.vinferLive.frames.slice(-100)`))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range frames {
			if f.ResultTS != nil && *f.ResultTS == f.TS && len(f.Boxes) > 0 {
				results.mu.Lock()
				_, known := results.byTS[f.TS]
				results.mu.Unlock()
				if known {
					chosen = f
					return true
				}
			}
		}
		return false
	})
	results.mu.Lock()
	want := results.byTS[chosen.TS]
	results.mu.Unlock()
	if len(want) != len(chosen.Boxes) {
		t.Fatalf("frame at PTS %.3f s: drawn %v, its result has %v", float64(chosen.TS)/90000, chosen.Boxes, want)
	}
	for i := range want {
		for k := range 4 {
			if math.Abs(want[i][k]-chosen.Boxes[i][k]) > 1e-6 {
				t.Fatalf("frame at PTS %.3f s: box %d drawn %v, its result has %v", float64(chosen.TS)/90000, i, chosen.Boxes[i], want[i])
			}
		}
	}
	noCSPViolations(t, ctx)
	shoot(t, ctx, "live-video-"+mode+".png")
}

// TestLivePageCannotPlay: a stream whose codec the browser cannot play (H.265 in headless
// Chromium, which has no H.265 decoder for WebRTC or Media Source Extensions) is shown as
// snapshots, and the page says why.
func TestLivePageCannotPlay(t *testing.T) {
	ctx := browser(t, 2*time.Minute)
	e := startLive(t, "", 4)
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"cam","source":%q,"loop":true,"realtime":true}`, asset(t, "videos/person-bicycle-car_hevc.mp4")), 201, nil)
	// Past its first B-frames, so that the server knows it reorders.
	testutil.Eventually(t, 60*time.Second, "inferred frames", func() bool { return inferred(e, "cam") > 10 })
	canH265, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof MediaSource !== 'undefined' && MediaSource.isTypeSupported('video/mp4; codecs="hvc1.1.6.L93.B0"')`))
	if err != nil {
		t.Fatal(err)
	}
	if canH265 {
		t.Skip("this Chromium plays H.265")
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/video.html?stream=cam")); err != nil {
		t.Fatal(err)
	}
	shown, err := chromedp.Run(ctx, chromedp.Poll[bool](`window.vinferLive.mode === 'snapshots' &&
		document.querySelector('#lv-note').textContent.includes('cannot play') &&
		document.querySelector('#lv-snap').naturalWidth > 0`, chromedp.WithPollingTimeout(60*time.Second), chromedp.WithPollingInterval(200*time.Millisecond)))
	if err != nil || !shown {
		state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify({mode: window.vinferLive.mode, note: window.vinferLive.note})`))
		t.Fatalf("no snapshots with a reason: %v: %s", err, state)
	}
	shoot(t, ctx, "live-video-cannot-play.png")
}
