package file

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/sourcetest"
)

// TestSplicedTS reads MPEG-TS files whose timestamps go back: two recordings of a clip with
// B-frames concatenated byte for byte (a recorder's segments joined with cat), and one whose
// 33-bit PTS wraps midway. Decoded as the pipeline does, every access unit gives a frame and
// the frames' PTS never go back; the first unit after the splice is marked Discontinuity and
// the first segment keeps its own timestamps.
func TestSplicedTS(t *testing.T) {
	ff := sourcetest.Tool(t, "ffmpeg")
	for _, clip := range []string{"car-detection.mp4", "person-bicycle-car_hevc.mp4"} {
		dir := t.TempDir()
		seg := filepath.Join(dir, "seg.ts")
		wrap := filepath.Join(dir, "wrap.ts")
		in := sourcetest.Asset(t, "videos/"+clip)
		for _, args := range [][]string{{"-t", "4", seg}, {"-t", "8", "-output_ts_offset", "95440", wrap}} {
			args = append([]string{"-v", "error", "-nostdin", "-i", in, "-map", "0:v:0", "-c", "copy"}, args...)
			if out, err := exec.Command(ff, args...).CombinedOutput(); err != nil {
				t.Fatalf("ffmpeg: %v\n%s", err, out)
			}
		}
		b, err := os.ReadFile(seg)
		if err != nil {
			t.Fatal(err)
		}
		spliced := filepath.Join(dir, "spliced.ts")
		if err := os.WriteFile(spliced, append(append([]byte{}, b...), b...), 0o644); err != nil {
			t.Fatal(err)
		}
		one := readDecoded(t, seg)
		t.Run(clip+"/spliced", func(t *testing.T) {
			two := readDecoded(t, spliced)
			ordered(t, two.pts)
			if two.units != 2*one.units || len(two.pts) != 2*len(one.pts) {
				t.Errorf("%d units, %d frames; want twice the segment's %d, %d", two.units, len(two.pts), one.units, len(one.pts))
			}
			if len(two.disc) != 1 || two.disc[0] != one.units {
				t.Errorf("discontinuities at units %v, want at %d", two.disc, one.units)
			}
			for i := range one.pts {
				if two.pts[i] != one.pts[i] {
					t.Fatalf("frame %d of the first segment: PTS %v, alone %v", i, two.pts[i], one.pts[i])
				}
			}
		})
		t.Run(clip+"/wrap", func(t *testing.T) {
			w := readDecoded(t, wrap)
			ordered(t, w.pts)
			if len(w.disc) != 0 || w.units != len(w.pts) {
				t.Errorf("%d units, %d frames, discontinuities %v: want a frame each, none", w.units, len(w.pts), w.disc)
			}
		})
	}
}

type decoded struct {
	units int
	pts   []time.Duration
	disc  []int // units marked Discontinuity
}

// readDecoded reads the file at path with a Source and decodes it as the pipeline does.
func readDecoded(t *testing.T, path string) decoded {
	t.Helper()
	s := &Source{Path: path}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dec := &codec.Decoder{Codec: s.Info().Codec, ReorderPTS: s.Info().PTSInDecodeOrder}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var d decoded
	emit := func(f *frame.Frame) error { d.pts = append(d.pts, f.PTS); f.Release(); return nil }
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		au, err := s.Read(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if au.Discontinuity {
			d.disc = append(d.disc, d.units)
		}
		d.units++
		if err := dec.Decode(ctx, au, emit); err != nil {
			t.Fatalf("unit %d: %v", d.units-1, err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		t.Fatal(err)
	}
	return d
}

func ordered(t *testing.T, pts []time.Duration) {
	t.Helper()
	for i := 1; i < len(pts); i++ {
		if pts[i] <= pts[i-1] {
			t.Errorf("frame %d: PTS %v after %v", i, pts[i], pts[i-1])
		}
	}
}
