package api_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/internal/testutil/gbsim"
)

// TestWebDevices drives the GB28181 devices panel in headless Chromium against a running
// platform and a simulated NVR (gbsim: raw SIP, four channels, catalog in GBK): the device shows
// online with its last keepalive and its four channels by name; "Analyse" on a channel adds
// gb28181://<device>/<channel> through the API, the platform INVITEs the device, the simulator
// sends the car clip as PS over RTP and the stream infers cars; when the keepalives stop, the
// device shows offline and its stream waits.
func TestWebDevices(t *testing.T) {
	const (
		serverID = "34020000002000000001"
		devID    = "34020000001320000007"
		password = "web-test-pass"
	)
	ctx := browser(t, 4*time.Minute)
	first := 41000 + int(time.Now().UnixNano()%8000)
	e := startWith(t, "", func(c *config.Config) {
		c.GB28181 = &config.GB28181{ID: serverID, Listen: "127.0.0.1:0", Password: password,
			MediaPorts:       fmt.Sprintf("%d-%d", first, first+20),
			KeepaliveTimeout: config.Duration(4 * time.Second), InviteTimeout: config.Duration(5 * time.Second)}
	}, nil)
	info, ok := e.app.GB28181()
	if !ok {
		t.Fatal("no platform")
	}
	d := gbsim.New(t, serverID, info.Listen, "UDP", devID, password)
	d.Clip = sourcetest.LoadClip(t, "videos/car-detection.mp4")
	if m := d.Register(password, 3600); m.Status() != 200 {
		t.Fatalf("register: %s", m.Start)
	}
	stop := make(chan struct{})
	d.Keepalives(500*time.Millisecond, stop)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			close(stop)
		}
	})

	if err := chromedp.Do(ctx,
		watchCSP(),
		chromedp.Navigate(e.url+"/"),
		chromedp.WaitVisible(chromedp.CSS(`#gb-devices`)),
	); err != nil {
		t.Fatalf("page load: %v", err)
	}
	dev := fmt.Sprintf(`.gb-device[data-device="%s"]`, devID)
	// Online, a recent keepalive, the catalog's four channels with their GBK names decoded.
	poll[bool](t, ctx, "device", fmt.Sprintf(`(() => {
		const d = document.querySelector('%s');
		if (!d || d.dataset.online !== '1') return false;
		const names = [...d.querySelectorAll('.gb-channel .gb-ch-name')].map(e => e.textContent);
		return names.length === 4 && names.includes('停车场') && d.querySelector('.gb-name').textContent === '测试录像机' &&
			/^last keepalive (just now|\d+s ago)$/.test(d.querySelector('.gb-keepalive').textContent) &&
			!!document.querySelector('#nav-devices:not([hidden])');
	})()`, dev), 60*time.Second)
	shoot(t, ctx, "web-devices.png")

	// Analyse the first channel: the stream is added through the API and media arrives.
	ch := d.Channels[0]
	if err := chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS(`#gb-transport`), "tcp-passive"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`%s .gb-channel[data-channel="%s"] .gb-analyse`, dev, ch))),
	); err != nil {
		t.Fatalf("analyse: %v", err)
	}
	id := "gb-" + ch
	poll[bool](t, ctx, "playing", fmt.Sprintf(`(() => {
		const c = document.querySelector('%s .gb-channel[data-channel="%s"] .gb-stream[data-stream="%s"]');
		return !!c && c.dataset.state === 'playing' && !!document.querySelector('.stream[data-stream="%s"]');
	})()`, dev, ch, id, id), 60*time.Second)
	var st struct {
		Source     string
		State      string
		Inferred   int64
		Detections int64
		Classes    map[string]int64
	}
	testutil.Eventually(t, 90*time.Second, "cars inferred from the simulated channel", func() bool {
		e.want("GET", "/api/streams/"+id, "", http.StatusOK, &st)
		return st.Classes["car"] > 0
	})
	if want := "gb28181://" + devID + "/" + ch + "?transport=tcp-passive"; st.Source != want || (st.State != "running" && st.State != "degraded") {
		// degraded: running, but a loaded machine's inference drops many of its frames
		t.Fatalf("stream %s: source %q state %s, want %q running (or degraded)", id, st.Source, st.State, want)
	}
	if d.Invites.Load() < 1 || !strings.Contains(d.LastInviteSDP.Load().(string), "TCP/RTP/AVP") {
		t.Fatalf("invites %d, offer %q", d.Invites.Load(), d.LastInviteSDP.Load())
	}
	t.Logf("%s: %d frames inferred, %d detections, %d cars", id, st.Inferred, st.Detections, st.Classes["car"])
	shoot(t, ctx, "web-devices-playing.png")

	// The device raises an alarm on the channel: its stream's chip counts it.
	if m := d.Alarm(ch, "移动侦测"); m.Status() != 200 {
		t.Fatalf("alarm: %s", m.Start)
	}
	poll[bool](t, ctx, "alarm shown", fmt.Sprintf(`(() => {
		const c = document.querySelector('%s .gb-stream[data-stream="%s"]');
		return !!c && c.dataset.alarms === '1' && c.textContent.endsWith(' · 1 alarm') && c.title.includes('移动侦测');
	})()`, dev, id), 60*time.Second)

	// Keepalives stop: the device turns offline on the page, its stream waits for it.
	close(stop)
	stopped = true
	poll[bool](t, ctx, "offline", fmt.Sprintf(`(() => {
		const d = document.querySelector('%s');
		const c = d && d.querySelector('.gb-stream[data-stream="%s"]');
		return !!d && d.dataset.online === '0' && d.querySelector('.gb-state').textContent === 'offline' &&
			!!c && c.dataset.state !== 'playing';
	})()`, dev, id), 60*time.Second)
	shoot(t, ctx, "web-devices-offline.png")
	noCSPViolations(t, ctx)
}
