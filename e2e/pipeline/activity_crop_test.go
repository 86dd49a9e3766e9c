package e2e_test

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
)

// shortQuietClip is quietClip shorter: 5 s of the empty room, then the sample's first 20 s.
func shortQuietClip(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("ffmpeg not installed (scripts/setup.sh installs it)")
	}
	dst := filepath.Join(t.TempDir(), "quiet-short.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", filepath.Join(assets(t), "videos", "one-by-one-person-detection.mp4"),
		"-t", "25", "-vf", "tpad=start_duration=5:start_mode=clone", "-an", "-c:v", "libx264", "-preset", "veryfast",
		"-g", "10", "-bf", "2", "-pix_fmt", "yuv420p", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

// TestActivityCropMissesNothing: with crop: motion the detector sees only the crop around the
// motion regions and the live tracks (the whole frame when that crop is over half of it), and
// the scene events are those of the full-frame, full-rate run: same types, zones, lines,
// directions and counts, each within one GOP + 200 ms. The clip: 5 s of an empty room, then
// 20 s of the README's sample scene (people walking in to the table and out by the exit line).
func TestActivityCropMissesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("two runs of a 25 s clip")
	}
	clip := shortQuietClip(t)
	full, _, fc := runScene(t, clip, sampleScene, nil)
	crop, ca, cc := runScene(t, clip, sampleScene, &config.Activity{Mode: config.ActivityGate, Crop: config.CropMotion})
	t.Logf("full: %d events, inferred %d; crop: %d events, inferred %d, on a crop %d", len(full), fc.Inferred, len(crop), cc.Inferred, ca.Cropped)
	for _, e := range full {
		t.Logf("full-rate event %s at %v", e.key, e.pts)
	}
	if len(full) < 4 {
		t.Fatalf("full-rate run: %d events", len(full))
	}
	compareEvents(t, "crop", full, crop, time.Second+200*time.Millisecond)
	if ca == nil || ca.Cropped == 0 {
		t.Errorf("no frame inferred on a crop: %+v", ca)
	}
}
