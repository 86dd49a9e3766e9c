package file

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/vinfer/vinfer/internal/sourcetest"
)

// FuzzRead opens arbitrary bytes as a file and reads what it can: Init and Read may fail, but
// must not panic, and every access unit they deliver must hold data.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"car-detection_remux.ts", "car-detection.mp4", "person-bicycle-car_hevc.mp4"} {
		b, err := os.ReadFile(sourcetest.Asset(f, "videos/"+name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:min(len(b), 64<<10)]) // the index and the first access units
	}
	f.Add([]byte("not a video at all"))
	f.Add([]byte{0, 0, 0, 1, 0x67, 0x42, 0, 0x1e, 0, 0, 0, 1, 0x68, 0xce, 0, 0, 0, 1, 0x65, 0x88})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "input")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		s := &Source{Path: path}
		defer s.Close()
		if err := s.Init(); err != nil {
			return
		}
		for i := 0; i < 200; i++ {
			au, err := s.Read(context.Background())
			if err != nil {
				return
			}
			if len(au.Data) == 0 || au.Codec != s.Info().Codec {
				t.Fatalf("access unit %d: %d bytes, codec %v", i, len(au.Data), au.Codec)
			}
		}
	})
}
