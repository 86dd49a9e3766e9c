package e2e_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestRawStreamPTS: a raw .h264 file with B-frames (no timestamps: source/file counts access
// units in decoding order) gives results whose PTS are those of an MP4 of the same pictures:
// one frame (0.1 s) apart in presentation order, also across a loop restart.
func TestRawStreamPTS(t *testing.T) {
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	const frames = 30 // three whole GOPs of one-by-one-person-detection.mp4 (10 fps, B-frames)
	raw := filepath.Join(t.TempDir(), "clip.h264")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", filepath.Join(assets(t), "videos/one-by-one-person-detection.mp4"),
		"-map", "0:v:0", "-c", "copy", "-bsf:v", "h264_mp4toannexb", "-frames:v", strconv.Itoa(frames), "-f", "h264", raw).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	a, rec, logs := start(t, 0, config.Stream{ID: "raw", Source: raw, Loop: true})
	var pts []time.Duration
	testutil.Eventually(t, 5*time.Minute, "results of two passes", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		pts = append(pts[:0], rec.pts["raw"]...)
		return len(pts) >= 2*frames
	})
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	checkNoLeaks(t, logs)
	for i, p := range pts {
		if want := time.Duration(i) * 100 * time.Millisecond; p != want {
			t.Fatalf("result %d has PTS %v, want %v (results %v)", i, p, want, pts[:min(len(pts), 2*frames)])
		}
	}
}
