package api_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/config"
)

// stillClip encodes a still, empty scene (a flat gray picture with a faint pattern) with FFmpeg:
// 320×240, 10 fps, a key frame every second.
func stillClip(t *testing.T, seconds int) string { return stillClipGOP(t, seconds, 10) }

// stillClipGOP is stillClip with a key frame every gop frames.
func stillClipGOP(t *testing.T, seconds, gop int) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	dst := filepath.Join(t.TempDir(), "still.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i",
		"color=c=0x808080:s=320x240:r=10", "-t", strconv.Itoa(seconds),
		"-c:v", "libx264", "-g", strconv.Itoa(gop), "-keyint_min", strconv.Itoa(gop), "-sc_threshold", "0", "-pix_fmt", "yuv420p", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

// movingClip encodes 20 s of FFmpeg's moving test pattern (testsrc2), 320×240 at 10 fps.
func movingClip(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	dst := filepath.Join(t.TempDir(), "moving.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=10", "-t", "20",
		"-c:v", "libx264", "-g", "10", "-pix_fmt", "yuv420p", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

// addStillAndPlain adds clip, looped in real time, as "still" (activity mode idle after 1s)
// and "plain" (no gating).
func addStillAndPlain(t *testing.T, e *env, clip string) {
	t.Helper()
	for _, s := range []config.Stream{
		{ID: "still", Source: clip, Model: "yolox", Loop: true, Realtime: true,
			Activity: &config.Activity{Mode: config.ActivityIdle, IdleAfter: config.Duration(time.Second)}},
		{ID: "plain", Source: clip, Model: "yolox", Loop: true, Realtime: true},
	} {
		if err := e.app.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}
}

// TestActivityAPI: a gated stream's state, motion and gated frames are in GET /api/streams/{id}
// and /metrics; a still scene goes idle (key frames only) and a wake call wakes it; a stream
// without gating has no activity_state and refuses a wake; bad settings are refused naming the
// field.
func TestActivityAPI(t *testing.T) {
	clip := stillClip(t, 30)
	e := start(t, "")
	addStillAndPlain(t, e, clip)
	var v api.StreamView
	wait := func(what string, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(2 * time.Minute); ; {
			e.want("GET", "/api/streams/still", "", 200, &v)
			if ok() {
				return
			}
			if time.Now().After(end) {
				t.Fatalf("%s: still %+v", what, v.ActivityState)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	wait("idle with probes and gated frames", func() bool {
		a := v.ActivityState
		return a != nil && a.State == "idle" && a.KeyFrameProbes > 0 && a.FramesGated > 0 && a.GOPSeconds == 1 && a.Parked
	})
	if a := v.ActivityState; a.HeldBytes <= 0 {
		t.Errorf("idle stream holds %d bytes of host memory, want its GOP buffer counted", a.HeldBytes)
	}
	if a := v.ActivityState; a.Mode != "idle" || a.MotionFraction != 0 || a.IdleOff != "" {
		t.Fatalf("activity %+v", a)
	}
	metrics := string(e.want("GET", "/metrics", "", 200, nil))
	for _, m := range []string{`vinfer_frames_gated_total{stream="still"}`, `vinfer_motion_fraction{stream="still"} 0`,
		`vinfer_activity_state{state="idle",stream="still"} 1`, `vinfer_activity_state{state="full",stream="still"} 0`,
		`vinfer_stream_decoder_parked{stream="still"} 1`, `vinfer_decoder_pool_decoders{role="probe"}`, `vinfer_decoder_pool_probes_total`} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
	if strings.Contains(metrics, `vinfer_frames_gated_total{stream="plain"}`) {
		t.Error("/metrics has gated frames for a stream without gating")
	}

	e.want("POST", "/api/streams/still/wake", "", 204, nil)
	wait("woken, its first result timed", func() bool {
		a := v.ActivityState
		// Not "unparked now": on a loaded machine the first result may come after idle_after,
		// and the stilled stream parks again before this poll.
		return a.Wakes >= 1 && a.BurstAccessUnits > 0 && a.WokeResults >= 1 && a.WakeMaxMS > 0
	})

	var plain map[string]any
	e.want("GET", "/api/streams/plain", "", 200, &plain)
	if _, ok := plain["activity_state"]; ok {
		t.Fatalf("a stream without gating has activity_state: %v", plain["activity_state"])
	}
	e.want("POST", "/api/streams/plain/wake", "", 409, nil)
	e.want("POST", "/api/streams/nope/wake", "", 404, nil)
	b := e.want("POST", "/api/streams", `{"id":"bad","source":"`+clip+`","model":"yolox","activity":{"mode":"gate","refresh":"10ms"}}`, 400, nil)
	if !strings.Contains(string(b), "activity.refresh") {
		t.Fatalf("bad settings: %s, want the field named", b)
	}
}

// TestActivityLongGOP: a stream whose GOP (6 s) is longer than max_gop (4 s) never goes idle:
// it decodes every frame and activity_state.idle_off says why.
func TestActivityLongGOP(t *testing.T) {
	clip := stillClipGOP(t, 20, 60)
	e := start(t, "")
	if err := e.app.AddStream(config.Stream{ID: "long", Source: clip, Model: "yolox",
		Activity: &config.Activity{Mode: config.ActivityIdle, IdleAfter: config.Duration(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	var v api.StreamView
	for end := time.Now().Add(2 * time.Minute); ; time.Sleep(100 * time.Millisecond) {
		e.want("GET", "/api/streams/long", "", 200, &v)
		if v.State == "ended" {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("stream not ended: %+v", v)
		}
	}
	a := v.ActivityState
	if a == nil || !strings.Contains(a.IdleOff, "max_gop") || a.KeyFrameProbes != 0 || a.GOPSeconds != 6 || v.Decoded != 200 {
		t.Fatalf("decoded %d, activity %+v: want every frame decoded, a 6 s GOP and idle_off naming max_gop", v.Decoded, a)
	}
}
