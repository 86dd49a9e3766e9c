package codec_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/file"
)

func asset(t testing.TB, rel string) string {
	t.Helper()
	_, f, _, _ := runtime.Caller(0)
	for d := filepath.Dir(f); filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "assets", rel)
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("%s missing: run scripts/setup.sh", p)
			}
			return p
		}
	}
	t.Fatal("go.mod not found")
	return ""
}

// decodeAll decodes a file and returns the frames' PTS in output order.
func decodeAll(t testing.TB, path string, threads int) (media.Codec, []int64) {
	src := &file.Source{Path: path}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dec := &codec.Decoder{Codec: src.Info().Codec, Threads: threads, Frames: 4}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	var pts []int64
	emit := func(f *frame.Frame) error {
		if f.Index != int64(len(pts)) || f.Width != src.Info().Width || f.Format != frame.FormatI420 {
			t.Errorf("frame %d: index %d %dx%d %v", len(pts), f.Index, f.Width, f.Height, f.Format)
		}
		pts = append(pts, int64(f.PTS))
		f.Release()
		return nil
	}
	ctx := context.Background()
	for {
		au, err := src.Read(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(ctx, au, emit); err != nil {
			t.Fatalf("AU %v: %v", au.PTS, err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		t.Fatal(err)
	}
	if err := dec.Close(); err != nil {
		t.Fatal(err)
	}
	return src.Info().Codec, pts
}

// TestDecodeEveryFrame checks the decoded frame counts of ../shared/assets/MANIFEST.md §3.
func TestDecodeEveryFrame(t *testing.T) {
	frame.SetDebug(true)
	defer frame.SetDebug(false)
	for _, tc := range []struct {
		file   string
		codec  media.Codec
		frames int
	}{
		{"car-detection.mp4", media.CodecH264, 377},
		{"one-by-one-person-detection.mp4", media.CodecH264, 1394},
		{"person-bicycle-car-detection_reenc.mp4", media.CodecH264, 459},
		{"person-bicycle-car_hevc.mp4", media.CodecH265, 460},
		{"car-detection_remux.ts", media.CodecH264, 377},
	} {
		t.Run(tc.file, func(t *testing.T) {
			c, pts := decodeAll(t, asset(t, "videos/"+tc.file), 1)
			if c != tc.codec || len(pts) != tc.frames {
				t.Fatalf("%v, %d frames; want %v, %d", c, len(pts), tc.codec, tc.frames)
			}
			for i := 1; i < len(pts); i++ {
				if pts[i] <= pts[i-1] {
					t.Fatalf("PTS not increasing at frame %d: %d after %d", i, pts[i], pts[i-1])
				}
			}
			if pts[0] != 0 {
				t.Errorf("first PTS %d, want 0", pts[0])
			}
		})
	}
}

func TestCorruptAccessUnitIsCountedNotFatal(t *testing.T) {
	src := &file.Source{Path: asset(t, "videos/car-detection.mp4")}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dec := &codec.Decoder{Codec: media.CodecH264}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	frames, corrupt := 0, 0
	emit := func(f *frame.Frame) error { frames++; f.Release(); return nil }
	for i := 0; ; i++ {
		au, err := src.Read(ctx)
		if err == io.EOF {
			break
		}
		if i%10 == 5 && len(au.Data) > 64 { // garble the middle of every 10th access unit
			garbled := append([]byte(nil), au.Data...)
			for k := len(garbled) / 2; k < len(garbled); k++ {
				garbled[k] ^= 0x5a
			}
			au.Data = garbled
		}
		if err := dec.Decode(ctx, au, emit); err != nil {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("unexpected error type: %v", err)
			}
			corrupt++
		}
	}
	dec.Flush(ctx, emit)
	if err := dec.Close(); err != nil {
		t.Fatal(err)
	}
	if frames < 300 {
		t.Fatalf("only %d frames survived (corrupt errors %d)", frames, corrupt)
	}
	t.Logf("%d frames decoded, %d access units reported corrupt", frames, corrupt)
}

func BenchmarkDecode(b *testing.B) {
	path := asset(b, "videos/one-by-one-person-detection.mp4")
	for i := 0; i < b.N; i++ {
		_, pts := decodeAll(b, path, 1)
		b.ReportMetric(float64(len(pts)*b.N)/b.Elapsed().Seconds(), "fps")
	}
}
