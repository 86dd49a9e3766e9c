package e2e_test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/testutil"
)

// stillClip makes 4 s of the sample's first picture (an empty room) at 10 fps with 1 s GOPs:
// a camera with nothing to see, looped.
func stillClip(t testing.TB) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	dst := filepath.Join(t.TempDir(), "still.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-t", "0.04", "-i", filepath.Join(assets(t), "videos", "one-by-one-person-detection.mp4"),
		"-vf", "tpad=stop_duration=4:stop_mode=clone,fps=10", "-an", "-c:v", "libx264", "-preset", "veryfast",
		"-g", "10", "-bf", "2", "-pix_fmt", "yuv420p", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

// TestIdleStreamsShareDecoders: a dozen realtime cameras watching a still scene go idle and
// then hold no decoder of their own (Parked): their key frames are decoded on the shared
// pool's two decoders and no stream holds one; waking one (as POST
// /api/streams/{id}/wake does) hands it a warm decoder, its held GOP is replayed and its
// first result after the wake comes out, timed (onset → first result).
func TestIdleStreamsShareDecoders(t *testing.T) {
	clip := stillClip(t)
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx")}}}
	a := apptest.MustApp(t, cfg, app.Options{})
	defer a.Stop()
	const n = 12
	ids := make([]string, n)
	for i := range ids {
		ids[i] = "cam" + string(rune('a'+i))
		s := config.Stream{ID: ids[i], Source: clip, Model: "m", Loop: true, Realtime: true,
			Activity: &config.Activity{Mode: config.ActivityIdle, IdleAfter: config.Duration(time.Second)}}
		if err := a.AddStream(s); err != nil {
			t.Fatal(err)
		}
	}
	parked := func() int {
		k := 0
		for _, id := range ids {
			if st, ok := a.Stream(id); ok && st.Activity != nil && st.Activity.Parked && st.Activity.State == defs.ActivityIdle {
				k++
			}
		}
		return k
	}
	testutil.Eventually(t, 25*time.Second, "every still camera idle without a decoder of its own", func() bool { return parked() == n })
	before := a.DecoderPools()
	testutil.Eventually(t, 20*time.Second, "idle key frames probed on the shared decoders", func() bool {
		return a.DecoderPools().Probes >= before.Probes+2*n
	})
	st := a.DecoderPools()
	if st.Taken != 0 || st.Probers > 2 || st.Busy != 0 {
		t.Errorf("pool while %d cameras idle: %+v; want no decoder held by a stream, at most 2 shared", n, st)
	}
	if s, _ := a.Stream(ids[0]); s.Activity.HeldBytes <= 0 || s.Activity.HeldBytes > int(config.DefaultGOPBytes)+1<<20 {
		t.Errorf("host memory held by an idle camera: %d bytes", s.Activity.HeldBytes)
	}

	if err := a.WakeStream(ids[3]); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 20*time.Second, "the woken camera's first result", func() bool {
		s, _ := a.Stream(ids[3])
		return s.Activity.WokeResults >= 1
	})
	s, _ := a.Stream(ids[3])
	after := a.DecoderPools()
	if s.Activity.Wakes < 1 || s.Activity.BurstUnits < 1 || s.Activity.WakeMaxNanos <= 0 || after.Handouts+after.Cold <= st.Handouts+st.Cold {
		t.Errorf("woken camera %+v, pool %+v: want a decoder handed out, the GOP replayed, the wake timed", s.Activity, after)
	}
	t.Logf("pool %+v; wake: burst %d units, onset → first result %v", after, s.Activity.BurstUnits, time.Duration(s.Activity.WakeMaxNanos))
}

// TestIdleFileEndsParked: a file that ends while its stream is idle without a decoder ends
// cleanly (ended, no error, every frame of it accounted for), and no decoder stays taken.
func TestIdleFileEndsParked(t *testing.T) {
	clip := stillClip(t)
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx")}}}
	a := apptest.MustApp(t, cfg, app.Options{})
	defer a.Stop()
	s := config.Stream{ID: "still", Source: clip, Model: "m",
		Activity: &config.Activity{Mode: config.ActivityIdle, IdleAfter: config.Duration(time.Second)}}
	if err := a.AddStream(s); err != nil {
		t.Fatal(err)
	}
	a.Pipeline.Wait()
	st, ok := a.Stream("still")
	if !ok {
		t.Fatal("stream gone")
	}
	if st.Err != nil || st.State() != defs.StateEnded || st.Activity == nil || !st.Activity.Parked || st.Activity.Probes == 0 {
		t.Fatalf("stream at its end: state %v, error %v, activity %+v; want ended idle without a decoder", st.State(), st.Err, st.Activity)
	}
	if c := st.Counters; c.Decoded+st.Activity.Gated < c.AccessUnits || c.Decoded >= c.AccessUnits {
		t.Errorf("access units %d, decoded %d, gated %d: want the held units counted, fewer decoded", c.AccessUnits, c.Decoded, st.Activity.Gated)
	}
	if p := a.DecoderPools(); p.Taken != 0 {
		t.Errorf("pool after the stream ended: %+v, want no decoder taken", p)
	}
}

// TestIdleRawAnnexBKeepsDecoder: a raw Annex-B file (timestamps counted in decoding order,
// re-stamped by the stream's own decoder) goes idle with its own decoder: the shared pool is
// not used for it (no decoder made there), and it still decodes key frames only while idle.
func TestIdleRawAnnexBKeepsDecoder(t *testing.T) {
	mp4 := stillClip(t)
	raw := filepath.Join(t.TempDir(), "still.h264")
	if out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", mp4, "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-f", "h264", raw).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	cfg := &config.Config{Models: []config.Model{{Name: "m", Path: filepath.Join(assets(t), "models/yolox_nano_416.onnx")}}}
	a := apptest.MustApp(t, cfg, app.Options{})
	defer a.Stop()
	s := config.Stream{ID: "raw", Source: raw, Model: "m",
		Activity: &config.Activity{Mode: config.ActivityIdle, IdleAfter: config.Duration(time.Second)}}
	if err := a.AddStream(s); err != nil {
		t.Fatal(err)
	}
	a.Pipeline.Wait()
	st, _ := a.Stream("raw")
	if st.Err != nil || st.Activity == nil || st.Activity.Parked || st.Activity.Probes == 0 {
		t.Fatalf("raw Annex-B stream: error %v, activity %+v; want idle probes on its own decoder", st.Err, st.Activity)
	}
	if p := a.DecoderPools(); p.Created != 0 {
		t.Errorf("pool %+v: want no decoder made for a re-stamped source", p)
	}
}
