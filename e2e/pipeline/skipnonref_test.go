package e2e_test

import (
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/vinfer/vinfer/config"
)

// bFrameClip encodes 10 s of FFmpeg's test pattern, 320×240 at 10 fps, as H.264 with a fixed
// I/P B B pattern whose B-frames are not references (b-pyramid off): 2 pictures in 3 are
// non-reference.
func bFrameClip(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	dst := filepath.Join(t.TempDir(), "bframes.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=10", "-t", "10",
		"-c:v", "libx264", "-g", "30", "-bf", "2", "-x264-params", "b-adapt=0:b-pyramid=none", "-pix_fmt", "yuv420p", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

// TestSkipNonRef: with skip_nonref and interval 2, the non-reference B-frames of a clip are
// never decoded (FFmpeg skip_frame = AVDISCARD_NONREF) and every other decoded picture is
// inferred, in order; without it every access unit is decoded.
func TestSkipNonRef(t *testing.T) {
	clip := bFrameClip(t)
	a, rec, logs := start(t, 1,
		config.Stream{ID: "skip", Source: clip, Interval: 2, SkipNonRef: true},
		config.Stream{ID: "all", Source: clip, Interval: 2})
	a.Pipeline.Wait()
	skip, _ := a.Stream("skip")
	all, _ := a.Stream("all")
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	checkNoLeaks(t, logs)
	s, f := skip.Counters, all.Counters
	t.Logf("skip_nonref: %d access units, %d decoded, %d inferred; all: %d, %d, %d", s.AccessUnits, s.Decoded, s.Inferred, f.AccessUnits, f.Decoded, f.Inferred)
	if f.AccessUnits != 100 || f.Decoded != 100 || s.AccessUnits != 100 {
		t.Fatalf("want 100 access units each, all decoded without skip_nonref: %+v %+v", s, f)
	}
	if s.Decoded > 40 || s.Decoded < 30 || s.Inferred != (s.Decoded+1)/2 {
		t.Fatalf("skip_nonref decoded %d of 100 (want the 34 reference pictures), inferred %d", s.Decoded, s.Inferred)
	}
	pts := rec.pts["skip"]
	for i := 1; i < len(pts); i++ {
		if pts[i] <= pts[i-1] {
			t.Fatalf("results out of order: %v", pts)
		}
	}
}
