package api_test

import (
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/pion/rtcp"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
)

// ntp is t as an NTP timestamp (RFC 5905: seconds since 1900 in 32.32 fixed point).
func ntp(t time.Time) uint64 {
	s := uint64(t.Unix() + 2208988800)
	f := uint64(t.Nanosecond()) << 32 / 1e9
	return s<<32 | f
}

// TestLiveLatency measures the live view on loopback (VINFER_BENCH=1): a camera written here
// sends the B-frame clip as RTP (RFC 6184) at its own pace, with RTCP sender reports giving
// each frame's capture time; vinfer infers it and serves it over WebRTC to the live page in
// headless Chromium. Glass-to-glass latency is the time from a frame's capture (the camera's
// clock, carried to the result's wallclock) to its expected display on the page
// (requestVideoFrameCallback); the camera's own B-frame reorder delay is part of it, as with a
// real camera. Overlay drift is how many frames apart the PTS of a frame shown and of the result
// drawn over it are. Figures: docs/benchmarks.md.
func TestLiveLatency(t *testing.T) {
	if os.Getenv("VINFER_BENCH") == "" {
		t.Skip("a measurement: VINFER_BENCH=1")
	}
	for _, c := range []struct{ name, clip, mode string }{
		{"b-frames-mse", "videos/one-by-one-person-detection.mp4", "mse"},
		{"no-b-frames-webrtc", "videos/car-detection.mp4", "webrtc"},
	} {
		t.Run(c.name, func(t *testing.T) { measureLive(t, c.clip, c.mode) })
	}
}

func measureLive(t *testing.T, rel, mode string) {
	clip := sourcetest.LoadClip(t, rel)
	port := sourcetest.UDPPortPair(t)
	e := startLive(t, "", 4)
	e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"cam","source":"rtp://127.0.0.1:%d?codec=h264"}`, port), 201, nil)
	cam := sourcetest.NewUDPSender(t, fmt.Sprintf("127.0.0.1:%d", port))

	// The camera: samples at their DTS pace; a frame of PTS p was captured R before it could
	// be sent, R the clip's largest PTS-DTS (the encoder's reorder delay).
	var reorder int64
	for _, s := range clip.Samples {
		reorder = max(reorder, s.PTS-s.DTS)
	}
	// A camera sending each picture as soon as it is encoded holds a picture only until the
	// newest one before it in decode order is captured: at most `eager` for display at a steady
	// pace, a frame less than R here, where pictures go out at the DTS pace.
	var eager, newest int64
	for i, s := range clip.Samples {
		if i == 0 || s.PTS > newest {
			newest = s.PTS
		}
		eager = max(eager, newest-s.PTS)
	}
	dts0 := clip.Samples[0].DTS
	frame := (clip.Samples[len(clip.Samples)-1].DTS - dts0) / int64(len(clip.Samples)-1) // ticks
	span := clip.Samples[len(clip.Samples)-1].DTS - dts0 + frame
	const seconds = 40
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		start := time.Now().Add(200 * time.Millisecond)
		at := func(ticks int64) time.Time { return start.Add(time.Duration(ticks) * time.Second / 90000) }
		seq, ssrc, lastSR := uint16(1), uint32(0x5eed), time.Time{}
		for pass := int64(0); ; pass++ {
			for i, s := range clip.Samples {
				off := pass * span
				if s.DTS+off-dts0 > seconds*90000 {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Until(at(s.DTS + off - dts0))):
				}
				pkts := clip.Packetize(t, i, i+1, 96, ssrc, seq, uint32(off), true)
				seq += uint16(len(pkts))
				cam.Send(t, pkts, 0)
				if time.Since(lastSR) > time.Second {
					lastSR = time.Now()
					sr := rtcp.SenderReport{SSRC: ssrc, NTPTime: ntp(at(s.PTS + off - dts0 - reorder)), RTPTime: uint32(s.PTS + off)}
					b, _ := sr.Marshal()
					_, _ = cam.Conn().Write(b)
				}
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-sent })

	ctx := browser(t, 3*time.Minute)
	testutil.Eventually(t, 60*time.Second, "first inferred frames", func() bool { return inferred(e, "cam") > 0 })
	if err := chromedp.Do(ctx, chromedp.Navigate(e.url+"/video.html?stream=cam")); err != nil {
		t.Fatal(err)
	}
	<-sent
	frames, err := chromedp.Run(ctx, chromedp.Evaluate[[]struct {
		TS        int64    `json:"ts"`
		ResultTS  *int64   `json:"resultTs"`
		ShownAt   float64  `json:"shownAt"`
		ArrivedAt *float64 `json:"arrivedAt"`
		Wallclock *float64 `json:"wallclock"`
	}](`window.vinferLive.frames`))
	if err != nil {
		t.Fatal(err)
	}
	target, _ := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.vinferLive.targetMs`))
	raises, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(window.vinferLive.raises)`))
	t.Logf("page delay raises [ms since page start, ms late]: %s", raises)
	dur, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`String(document.querySelector('#lv-video').duration)`))
	t.Logf("camera reorder delay %.0f ms at the DTS pace, %.0f ms for a camera sending pictures once encoded; video duration %s",
		float64(reorder)/90, float64(eager)/90, dur)
	if mode == "mse" {
		jumps, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`window.vinferLive.jumps`))
		if trace, err := chromedp.Run(ctx, chromedp.Evaluate[[][4]float64](`window.vinferLive.trace`)); err == nil && len(trace) > 10 {
			trace = trace[len(trace)/2:]
			var behind, end []float64
			low := 0
			for _, r := range trace {
				behind, end = append(behind, r[1]), append(end, r[3])
				if r[2] < 3 {
					low++
				}
			}
			slices.Sort(behind)
			slices.Sort(end)
			t.Logf("play head behind the newest complete picture p50 %.0f ms (p5 %.0f, p95 %.0f), behind the buffered end p50 %.0f ms; %d of %d samples below HAVE_FUTURE_DATA; %d catch-up jumps",
				behind[len(behind)/2], behind[len(behind)/20], behind[len(behind)*95/100], end[len(end)/2], low, len(trace), jumps)
		}
	}
	if got, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`window.vinferLive.mode`)); got != mode {
		t.Fatalf("page played the stream as %q, want %q", got, mode)
	}
	quality, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`(async () => {
		const q = document.querySelector('#lv-video').getVideoPlaybackQuality();
		let s = '';
		if (window.vinferLive.pc) (await window.vinferLive.pc.getStats()).forEach((r) => { if (r.type === 'inbound-rtp') s = JSON.stringify({decoded: r.framesDecoded, dropped: r.framesDropped, received: r.framesReceived, jb: r.jitterBufferDelay / r.jitterBufferEmittedCount, fps: r.framesPerSecond}); });
		return JSON.stringify({total: q.totalVideoFrames, dropped: q.droppedVideoFrames}) + ' ' + s;
	})()`, chromedp.EvalAwaitPromise))
	t.Logf("page: %d frames logged; video %s", len(frames), quality)
	// The last 20 s: after the page's delay settled.
	var lat, toPage, onPage []float64
	var drift []int
	none := 0
	for _, f := range frames {
		if f.ShownAt < frames[len(frames)-1].ShownAt-20000 {
			continue
		}
		if f.ResultTS == nil {
			none++
			continue
		}
		drift = append(drift, int(math.Round(math.Abs(float64(f.TS-*f.ResultTS))/float64(frame))))
		if f.Wallclock != nil && *f.ResultTS == f.TS {
			lat = append(lat, f.ShownAt-*f.Wallclock)
			if f.ArrivedAt != nil { // MSE: the frame's fragment came to the page at ArrivedAt
				toPage = append(toPage, *f.ArrivedAt-*f.Wallclock)
				onPage = append(onPage, f.ShownAt-*f.ArrivedAt)
			}
		}
	}
	if len(lat) < 20 || len(drift) < 20 {
		t.Fatalf("%d frames shown, %d with a result, %d with a capture time: too few to measure", len(frames), len(drift), len(lat))
	}
	slices.Sort(lat)
	slices.Sort(drift)
	q := func(p float64) float64 { return lat[int(p*float64(len(lat)-1))] }
	var sv api.StreamView
	e.want("GET", "/api/streams/cam", "", 200, &sv)
	t.Logf("glass-to-glass over %d frames: p50 %.0f ms, p95 %.0f ms, max %.0f ms (camera reorder delay %.0f ms, page delay for results %.0f ms, decoder to result %.0f ms)",
		len(lat), q(0.5), q(0.95), lat[len(lat)-1], float64(reorder)/90, target, sv.LatencyMS)
	if len(toPage) > 0 {
		slices.Sort(toPage)
		slices.Sort(onPage)
		t.Logf("of which capture to the fragment at the page p50 %.0f ms (p95 %.0f), fragment to display p50 %.0f ms (p95 %.0f)",
			toPage[len(toPage)/2], toPage[len(toPage)*95/100], onPage[len(onPage)/2], onPage[len(onPage)*95/100])
	}
	t.Logf("overlay drift over %d frames with a result: p50 %d, p95 %d, max %d frames (%d%% at 0); %d frames shown with none",
		len(drift), drift[len(drift)/2], drift[len(drift)*95/100], drift[len(drift)-1], 100*sort.SearchInts(drift, 1)/len(drift), none)
}
