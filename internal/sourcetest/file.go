package sourcetest

import (
	"testing"
)

// LoadFile is LoadClip for a video at any path (a clip the test made), not cached.
func LoadFile(t testing.TB, path string) *Clip {
	t.Helper()
	c, err := loadClip(Tool(t, "ffmpeg"), Tool(t, "ffprobe"), path, t.TempDir())
	if err != nil {
		t.Fatalf("sourcetest: reading %s: %v", path, err)
	}
	return c
}
