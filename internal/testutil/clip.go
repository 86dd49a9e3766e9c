package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// ShortClip returns a copy of the asset rel (a video under assets/) holding its first frames
// pictures, cut without re-encoding (FFmpeg -c copy) into a test temporary folder. frames must
// end a GOP of a clip without B-frames, so that every picture decodes; ffprobe checks the count.
// Whole-app tests use it where the clip's length adds only inference time.
func ShortClip(t testing.TB, rel string, frames int) string {
	t.Helper()
	src := Asset(t, rel)
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (scripts/setup.sh installs it)", tool)
		}
	}
	dst := filepath.Join(t.TempDir(), fmt.Sprintf("%d-%s", frames, filepath.Base(rel)))
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", src, "-map", "0:v:0", "-c", "copy",
		"-frames:v", fmt.Sprint(frames), dst).CombinedOutput()
	if err != nil {
		t.Fatalf("cutting %s: %v\n%s", rel, err, out)
	}
	out, err = exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", dst).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", dst, err)
	}
	var n int
	if _, err := fmt.Sscan(string(out), &n); err != nil || n != frames {
		os.Remove(dst)
		t.Fatalf("%s cut to %d frames decodes %q frames", rel, frames, out)
	}
	return dst
}
