// Package onvif_test runs whole apps against ONVIF cameras simulated from the specification's
// messages (onvif/onvifsim): streams added as onvif:// URLs, camera events waking idle streams.
package onvif_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/metrics"
	"github.com/vinfer/vinfer/onvif/onvifsim"
)

const wait = 2 * time.Minute

// stillClip encodes 20 s of a still gray picture, 320×240 at 10 fps, a key frame every second:
// nothing moves, so a gated stream goes idle and stays so.
func stillClip(t *testing.T) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "still.mp4")
	out, err := exec.Command(sourcetest.Tool(t, "ffmpeg"), "-v", "error", "-nostdin", "-f", "lavfi", "-i", "color=c=0x808080:s=320x240:r=10",
		"-t", "20", "-c:v", "libx264", "-g", "10", "-keyint_min", "10", "-sc_threshold", "0", "-pix_fmt", "yuv420p", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

// TestCameraEventWakes adds a still camera as onvif://user:pass@host:port/profile with activity
// idle: it plays, goes idle, and stays idle without a wake until the camera reports motion on
// its PullPoint subscription, which wakes it. A stream of the same camera without gating does
// not subscribe; removing the gated stream ends its subscription.
func TestCameraEventWakes(t *testing.T) {
	const pass = "s3cret-Pa55"
	cam := onvifsim.StartCamera(t, sourcetest.LoadFile(t, stillClip(t)), "admin", pass)
	d := &onvifsim.Device{User: "admin", Password: pass, RTSPAddr: cam.Addr(),
		Profiles: []onvifsim.Profile{{Token: "prof_main", Name: "main", Width: 320, Height: 240, Path: "main"}}}
	d.Start(t)
	cfg := &config.Config{Dir: t.TempDir(), Output: config.Output{JSONL: "none"},
		Models: []config.Model{{Name: "m", Path: testutil.Asset(t, "models/yolox_nano_416.onnx")}}}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	src := fmt.Sprintf("onvif://admin:%s@%s/main", pass, d.Addr())
	for _, s := range []config.Stream{
		{ID: "door", Source: src, Model: "m", Transport: config.TransportTCP,
			Activity: &config.Activity{Mode: config.ActivityIdle, IdleAfter: config.Duration(time.Second)}},
		{ID: "plain", Source: src, Model: "m", Transport: config.TransportTCP},
	} {
		if err := a.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}
	activity := func() defs.Activity {
		if st, ok := a.Stream("door"); ok && st.Activity != nil {
			return *st.Activity
		}
		return defs.Activity{}
	}
	testutil.Eventually(t, wait, "door idle and subscribed", func() bool {
		return activity().State == defs.ActivityIdle && d.Count("PullMessages") > 0
	})
	if w := activity().Wakes; w != 0 {
		t.Fatalf("%d wakes before any camera event", w)
	}
	d.Motion(true)
	testutil.Eventually(t, wait, "door woken by the camera's motion event", func() bool { return activity().Wakes >= 1 })
	m := metrics.New()
	done := make(chan struct{})
	defer close(done)
	m.Watch(a, done)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{`vinfer_onvif_events_total{kind="wakes",stream="door"} 1`, `vinfer_onvif_events_total{kind="received",stream="door"} 1`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if n := d.Count("CreatePullPointSubscription"); n != 1 {
		t.Fatalf("%d subscriptions, want 1 (the stream without gating has none)", n)
	}
	if err := a.RemoveStream("door"); err != nil {
		t.Fatal(err)
	}
	if d.Count("Unsubscribe") != 1 {
		t.Fatalf("%d unsubscriptions after the stream went", d.Count("Unsubscribe"))
	}
}
