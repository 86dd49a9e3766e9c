package file

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asticode/go-astiav"

	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
)

// fuzzHang is how long one FuzzRead input may take before it counts as a hang.
const fuzzHang = 30 * time.Second

// quietFFmpeg silences FFmpeg's log for the rest of f: fuzzed input makes it complain at every
// execution.
func quietFFmpeg(f *testing.F) {
	level := astiav.GetLogLevel()
	astiav.SetLogLevel(astiav.LogLevelQuiet)
	f.Cleanup(func() { astiav.SetLogLevel(level) })
}

// FuzzRead opens arbitrary bytes as a file, once or looping, and reads up to 200 access units
// under a deadline (seeded with tiny clips in every container, cut and damaged copies of them,
// and the first 4 KB of the bundled clips): Init and Read fail with a "file ..." error, io.EOF
// or the deadline, or deliver non-empty access units of the stream's codec; nothing panics or
// hangs.
func FuzzRead(f *testing.F) {
	quietFFmpeg(f)
	clips, err := filepath.Glob("testdata/clips/*")
	if err != nil || len(clips) == 0 {
		f.Fatalf("no clips in testdata/clips: %v", err)
	}
	for _, c := range clips {
		b, err := os.ReadFile(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, false)
		f.Add(b, true)
		f.Add(b[:len(b)/2], false)
		damaged := append([]byte{}, b...)
		for i := len(b) / 8; i < len(b); i += len(b) / 8 {
			damaged[i] ^= 0x5a
		}
		f.Add(damaged, false)
	}
	for _, name := range []string{"car-detection_remux.ts", "car-detection.mp4", "person-bicycle-car_hevc.mp4"} {
		b, err := os.ReadFile(sourcetest.Asset(f, "videos/"+name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[:4<<10], false)
	}
	f.Add([]byte("not a video at all"), false)
	f.Add([]byte{0, 0, 0, 1, 0x67, 0x42, 0, 0x1e, 0, 0, 0, 1, 0x68, 0xce, 0, 0, 0, 1, 0x65, 0x88}, true)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, loop bool) {
		hang := time.AfterFunc(fuzzHang, func() { panic("FuzzRead: input still running after " + fuzzHang.String()) })
		defer hang.Stop()
		path := filepath.Join(dir, "input")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		clear := func(err error) {
			if !strings.HasPrefix(err.Error(), "file ") {
				t.Fatalf("unclear error %q", err)
			}
		}
		s := &Source{Path: path, Loop: loop}
		defer s.Close()
		if err := s.Init(); err != nil {
			clear(err)
			return
		}
		if c := s.Info().Codec; c != media.CodecH264 && c != media.CodecH265 {
			t.Fatalf("Init accepted codec %v", c)
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzHang/2)
		defer cancel()
		for i := 0; i < 200; i++ {
			au, err := s.Read(ctx)
			if errors.Is(err, io.EOF) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			if err != nil {
				clear(err)
				return
			}
			if len(au.Data) == 0 || au.Codec != s.Info().Codec {
				t.Fatalf("access unit %d: %d bytes, codec %v", i, len(au.Data), au.Codec)
			}
		}
	})
}

// TestFuzzClips checks that FuzzRead's seed clips are whole: each delivers its 4 access units.
func TestFuzzClips(t *testing.T) {
	clips, _ := filepath.Glob("testdata/clips/*")
	for _, c := range clips {
		s := &Source{Path: c}
		if err := s.Init(); err != nil {
			t.Fatal(err)
		}
		n := 0
		for {
			_, err := s.Read(context.Background())
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			n++
		}
		s.Close()
		if n != 4 {
			t.Errorf("%s: %d access units, want 4", c, n)
		}
	}
}
