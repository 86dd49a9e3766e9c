package codec_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/file"
)

func asset(t testing.TB, rel string) string { return testutil.Asset(t, rel) }

// tool returns the path of an external program, skipping the test when it is not installed.
func tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (Debian package ffmpeg): %v", name, err)
	}
	return p
}

// accessUnits reads every access unit of a file through source/file, copying the data.
func accessUnits(t testing.TB, path string) (media.StreamInfo, []media.AccessUnit) {
	t.Helper()
	src := &file.Source{Path: path}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var aus []media.AccessUnit
	for {
		au, err := src.Read(context.Background())
		if err == io.EOF {
			return src.Info(), aus
		}
		if err != nil {
			t.Fatal(err)
		}
		c := *au
		c.Data = bytes.Clone(au.Data)
		aus = append(aus, c)
	}
}

// decoded is what a test keeps of a frame: its metadata and a packed copy of its pixels.
type decoded struct {
	pts     time.Duration
	index   int64
	w, h    int
	format  frame.PixelFormat
	yuv     []byte // I420 packed, without stride padding
	wall    time.Time
	fullRng bool
}

// pack copies an I420 frame's planes without their stride padding.
func pack(f *frame.Frame) []byte {
	var out []byte
	for k, rows := range [3]int{f.Height, (f.Height + 1) / 2, (f.Height + 1) / 2} {
		w := f.Width
		if k > 0 {
			w = (f.Width + 1) / 2
		}
		for y := 0; y < rows; y++ {
			out = append(out, f.Planes[k][y*f.Strides[k]:y*f.Strides[k]+w]...)
		}
	}
	return out
}

// run decodes aus (and flushes) with dec, returning the frames and the errors of Decode.
func run(t testing.TB, dec *codec.Decoder, aus []media.AccessUnit, keepPixels bool) (frames []decoded, errs []error) {
	t.Helper()
	ctx := context.Background()
	emit := func(f *frame.Frame) error {
		d := decoded{pts: f.PTS, index: f.Index, w: f.Width, h: f.Height, format: f.Format, wall: f.Wallclock, fullRng: f.FullRange}
		if keepPixels {
			d.yuv = pack(f)
		}
		frames = append(frames, d)
		f.Release()
		return nil
	}
	for i := range aus {
		if err := dec.Decode(ctx, &aus[i], emit); err != nil {
			if !errors.Is(err, codec.ErrCorrupt) {
				t.Fatalf("access unit %d: %v", i, err)
			}
			errs = append(errs, err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		t.Fatal(err)
	}
	return frames, errs
}

// ffmpegFrames decodes the first n pictures of path with the ffmpeg program, as packed yuv420p.
func ffmpegFrames(t testing.TB, path string, n, w, h int) [][]byte {
	t.Helper()
	cmd := exec.Command(tool(t, "ffmpeg"), "-v", "error", "-threads", "1", "-i", path, "-map", "0:v:0",
		"-frames:v", strconv.Itoa(n), "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "yuv420p", "pipe:1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ffmpeg: %v", err)
	}
	size := w*h + 2*((w+1)/2)*((h+1)/2)
	if len(out) != n*size {
		t.Fatalf("ffmpeg wrote %d bytes, want %d frames of %d", len(out), n, size)
	}
	var frames [][]byte
	for i := 0; i < n; i++ {
		frames = append(frames, out[i*size:(i+1)*size])
	}
	return frames
}

// clips are the repository's videos with the decoded frame counts of assets/MANIFEST.md §3.
var clips = []struct {
	name   string
	codec  media.Codec
	frames int
}{
	{"car-detection.mp4", media.CodecH264, 377},
	{"one-by-one-person-detection.mp4", media.CodecH264, 1394},       // B-frames
	{"person-bicycle-car-detection_reenc.mp4", media.CodecH264, 459}, // edit-list pre-roll
	{"person-bicycle-car_hevc.mp4", media.CodecH265, 460},            // B-pyramid
	{"car-detection_remux.ts", media.CodecH264, 377},
}

// TestDecodeClips decodes every clip to the manifest's frame count, in presentation order,
// with pool accounting back to zero (debug mode reports leaks and double releases).
func TestDecodeClips(t *testing.T) {
	frame.SetDebug(true)
	defer frame.SetDebug(false)
	for _, c := range clips {
		for _, threads := range []int{1, 4} {
			if threads != 1 && c.name != "one-by-one-person-detection.mp4" && c.name != "person-bicycle-car_hevc.mp4" {
				continue // frame threading only where reordering makes it interesting
			}
			t.Run(c.name+"/threads="+strconv.Itoa(threads), func(t *testing.T) {
				info, aus := accessUnits(t, asset(t, "videos/"+c.name))
				if info.Codec != c.codec {
					t.Fatalf("codec %v", info.Codec)
				}
				dec := &codec.Decoder{Codec: info.Codec, Threads: threads, Frames: 4}
				if err := dec.Init(); err != nil {
					t.Fatal(err)
				}
				frames, errs := run(t, dec, aus, false)
				if len(errs) > 0 {
					t.Fatalf("%d decode errors, first: %v", len(errs), errs[0])
				}
				if len(frames) != c.frames {
					t.Fatalf("%d frames, want %d", len(frames), c.frames)
				}
				for i, f := range frames {
					if f.index != int64(i) || f.w != info.Width || f.h != info.Height || f.format != frame.FormatI420 || f.fullRng {
						t.Fatalf("frame %d: index %d, %dx%d %v full range %v", i, f.index, f.w, f.h, f.format, f.fullRng)
					}
					if i > 0 && f.pts <= frames[i-1].pts {
						t.Fatalf("frame %d: PTS %v after %v", i, f.pts, frames[i-1].pts)
					}
				}
				if frames[0].pts != 0 {
					t.Errorf("first PTS %v, want 0", frames[0].pts)
				}
				st := dec.Stats()
				if st.Frames != int64(c.frames) || st.Pools != 1 || st.Rejected+st.Concealed+st.Skipped+st.Converted != 0 {
					t.Errorf("stats %+v", st)
				}
				if ps := dec.Pool().Stats(); ps.InUse != 0 || ps.HighWater != 1 {
					t.Errorf("pool %+v", ps)
				}
				if err := dec.Close(); err != nil {
					t.Fatal(err)
				}
				if err := dec.Close(); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestPixelsMatchFFmpeg compares decoded pictures with the ffmpeg program's, byte for byte: the
// zero-copy plane views are right, and B-frames come out in the right order.
func TestPixelsMatchFFmpeg(t *testing.T) {
	for _, name := range []string{"one-by-one-person-detection.mp4", "person-bicycle-car-detection_reenc.mp4", "person-bicycle-car_hevc.mp4"} {
		t.Run(name, func(t *testing.T) {
			path := asset(t, "videos/"+name)
			info, aus := accessUnits(t, path)
			const n = 24
			want := ffmpegFrames(t, path, n, info.Width, info.Height)
			dec := &codec.Decoder{Codec: info.Codec}
			if err := dec.Init(); err != nil {
				t.Fatal(err)
			}
			defer dec.Close()
			frames, _ := run(t, dec, aus[:n+12], true)
			for i := 0; i < n; i++ {
				if !bytes.Equal(frames[i].yuv, want[i]) {
					t.Fatalf("frame %d (PTS %v) differs from ffmpeg's", i, frames[i].pts)
				}
			}
		})
	}
}

// TestCorruptData writes garbage into the middle of access units of an H.264 stream: Decode
// reports typed, counted errors, never fails for good, and the pictures from the next key frame
// on are exactly those of a clean decode.
func TestCorruptData(t *testing.T) {
	frame.SetDebug(true)
	defer frame.SetDebug(false)
	info, clean := accessUnits(t, asset(t, "videos/car-detection.mp4"))
	ref := &codec.Decoder{Codec: info.Codec}
	if err := ref.Init(); err != nil {
		t.Fatal(err)
	}
	want, _ := run(t, ref, clean, true)
	if err := ref.Close(); err != nil {
		t.Fatal(err)
	}

	bad := make([]media.AccessUnit, len(clean))
	copy(bad, clean)
	damaged := map[int]bool{}
	seed := uint32(1)
	for i := 5; i < len(bad)/2; i += 17 {
		d := bytes.Clone(bad[i].Data)
		for k := len(d) / 3; k < len(d)*2/3; k++ {
			seed = seed*1664525 + 1013904223 // LCG: reproducible garbage
			d[k] = byte(seed >> 24)
		}
		bad[i].Data = d
		damaged[i] = true
	}
	dec := &codec.Decoder{Codec: info.Codec}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	got, errs := run(t, dec, bad, true)
	st := dec.Stats()
	t.Logf("%d access units damaged: %d frames out of %d, %d errors, stats %+v", len(damaged), len(got), len(want), len(errs), st)
	if len(errs) == 0 || st.Rejected+st.Concealed == 0 {
		t.Fatal("garbage went unnoticed")
	}
	for _, err := range errs {
		var de *codec.DecodeError
		if !errors.As(err, &de) || de.Reason == "" {
			t.Fatalf("untyped error %v", err)
		}
	}
	if int64(len(got))+st.Concealed != int64(len(want)) {
		t.Errorf("%d frames + %d concealed, want %d", len(got), st.Concealed, len(want))
	}
	// From the first key frame after the last damaged unit on, the pictures are exact.
	last := 0
	for i := range damaged {
		last = max(last, i)
	}
	resume := time.Duration(-1)
	for i := last + 1; i < len(clean); i++ {
		if clean[i].Key {
			resume = clean[i].PTS
			break
		}
	}
	if resume < 0 {
		t.Fatal("no key frame after the damage")
	}
	byPTS := map[time.Duration][]byte{}
	for _, f := range want {
		byPTS[f.pts] = f.yuv
	}
	checked := 0
	for _, f := range got {
		if f.pts >= resume {
			if !bytes.Equal(f.yuv, byPTS[f.pts]) {
				t.Fatalf("frame at %v after the key frame at %v differs from the clean decode", f.pts, resume)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no frame after recovery")
	}
	if err := dec.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestMissingSlices cuts access units short, as a lossy network would (the tail of a slice
// lost): the decoder conceals or drops them and goes on.
func TestMissingSlices(t *testing.T) {
	for _, name := range []string{"one-by-one-person-detection.mp4", "person-bicycle-car_hevc.mp4"} {
		t.Run(name, func(t *testing.T) {
			info, aus := accessUnits(t, asset(t, "videos/"+name))
			aus = aus[:200]
			cut := 0
			for i := 3; i < len(aus); i += 7 {
				aus[i].Data = aus[i].Data[:len(aus[i].Data)/2]
				cut++
			}
			dec := &codec.Decoder{Codec: info.Codec}
			if err := dec.Init(); err != nil {
				t.Fatal(err)
			}
			frames, errs := run(t, dec, aus, false)
			st := dec.Stats()
			t.Logf("%d of %d access units cut: %d frames, %d errors, stats %+v", cut, len(aus), len(frames), len(errs), st)
			if len(frames) < len(aus)/2 {
				t.Fatalf("only %d frames", len(frames))
			}
			if err := dec.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWaitsForKeyFrame starts a stream in the middle of a GOP, as a live source may.
func TestWaitsForKeyFrame(t *testing.T) {
	info, aus := accessUnits(t, asset(t, "videos/car-detection.mp4"))
	first := -1
	for i := 1; i < len(aus); i++ {
		if aus[i].Key {
			first = i
			break
		}
	}
	dec := &codec.Decoder{Codec: info.Codec}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	frames, errs := run(t, dec, aus[1:], false)
	if len(errs) != first-1 || dec.Stats().Skipped != int64(first-1) {
		t.Fatalf("%d errors, stats %+v; want %d skipped", len(errs), dec.Stats(), first-1)
	}
	if len(frames) != len(aus)-first || frames[0].pts != aus[first].PTS {
		t.Fatalf("%d frames from %v", len(frames), frames[0].pts)
	}
}

// TestBackpressure holds every frame of the pool: Decode waits for a release and gives up when
// its context ends, and the decoder goes on afterwards.
func TestBackpressure(t *testing.T) {
	frame.SetDebug(true)
	defer frame.SetDebug(false)
	info, aus := accessUnits(t, asset(t, "videos/car-detection.mp4"))
	dec := &codec.Decoder{Codec: info.Codec, Frames: 2}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	var held []*frame.Frame
	hold := func(f *frame.Frame) error { held = append(held, f); return nil }
	i := 0
	for ; len(held) < 2; i++ {
		if err := dec.Decode(context.Background(), &aus[i], hold); err != nil {
			t.Fatal(err)
		}
	}
	// onWait returns a context for one Decode that runs act once Decode waits on it for a free
	// frame, and a function to call after Decode that reports whether it waited.
	onWait := func(parent context.Context, act func()) (context.Context, func() bool) {
		ctx, waiting := testutil.Blocking(parent)
		done, acted := make(chan struct{}), make(chan bool, 1)
		go func() {
			select {
			case <-waiting:
				act()
				acted <- true
			case <-done:
				acted <- false
			}
		}()
		return ctx, func() bool { close(done); return <-acted }
	}
	parent, cancel := context.WithCancel(context.Background())
	ctx, waited := onWait(parent, cancel)
	err := dec.Decode(ctx, &aus[i], hold)
	if w := waited(); !w || !errors.Is(err, context.Canceled) || dec.Stats().Dropped != 1 {
		t.Fatalf("Decode with the pool exhausted: %v, waited %v, stats %+v", err, w, dec.Stats())
	}
	i++
	ctx, waited = onWait(context.Background(), held[0].Release)
	n := 0
	err = dec.Decode(ctx, &aus[i], func(f *frame.Frame) error { n++; f.Release(); return nil })
	if w := waited(); !w || err != nil || n != 1 {
		t.Fatalf("Decode after a release: %v, waited %v, %d frames", err, w, n)
	}
	held[1].Release()
	if err := dec.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestResolutionChange feeds a stream that changes size: a new pool serves the new size while
// a frame of the old size, still held, keeps its pixels.
func TestResolutionChange(t *testing.T) {
	frame.SetDebug(true)
	defer frame.SetDebug(false)
	small := filepath.Join(t.TempDir(), "small.mp4")
	out, err := exec.Command(tool(t, "ffmpeg"), "-v", "error", "-i", asset(t, "videos/car-detection.mp4"),
		"-frames:v", "30", "-vf", "scale=320:180", "-c:v", "libx264", "-bf", "2", "-an", small).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	info, big := accessUnits(t, asset(t, "videos/car-detection.mp4"))
	_, little := accessUnits(t, small)
	aus := append(append([]media.AccessUnit{}, big[:20]...), little...)
	for i := 20; i < len(aus); i++ {
		aus[i].PTS += big[19].PTS + time.Second
		aus[i].DTS += big[19].PTS + time.Second
	}
	dec := &codec.Decoder{Codec: info.Codec, Frames: 3}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	var kept *frame.Frame
	var keptPixels []byte
	sizes := map[[2]int]int{}
	emit := func(f *frame.Frame) error {
		sizes[[2]int{f.Width, f.Height}]++
		if kept == nil {
			kept, keptPixels = f, pack(f)
			return nil
		}
		f.Release()
		return nil
	}
	ctx := context.Background()
	for i := range aus {
		if err := dec.Decode(ctx, &aus[i], emit); err != nil {
			t.Fatal(err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		t.Fatal(err)
	}
	if sizes[[2]int{768, 432}] != 20 || sizes[[2]int{320, 180}] != 30 || dec.Stats().Pools != 2 {
		t.Fatalf("sizes %v, stats %+v", sizes, dec.Stats())
	}
	if !bytes.Equal(pack(kept), keptPixels) {
		t.Fatal("a held frame of the old size changed")
	}
	if err := dec.Close(); err == nil {
		t.Fatal("Close did not report the held frame")
	}
	kept.Release()
	if err := dec.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestConvertedFormats decodes 10-bit and 4:4:4 streams, which swscale turns into 8-bit I420.
func TestConvertedFormats(t *testing.T) {
	for _, c := range []struct {
		name, enc, pixfmt string
		codec             media.Codec
	}{
		{"h264-10bit.mkv", "libx264", "yuv420p10le", media.CodecH264},
		{"h264-444.mkv", "libx264", "yuv444p", media.CodecH264},
		{"hevc-10bit.mkv", "libx265", "yuv420p10le", media.CodecH265},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), c.name)
			args := []string{"-v", "error", "-f", "lavfi", "-i", "testsrc2=duration=1:size=176x144:rate=10",
				"-c:v", c.enc, "-pix_fmt", c.pixfmt}
			if c.enc == "libx265" {
				args = append(args, "-x265-params", "log-level=error")
			}
			args = append(args, path)
			if out, err := exec.Command(tool(t, "ffmpeg"), args...).CombinedOutput(); err != nil {
				t.Fatalf("ffmpeg: %v\n%s", err, out)
			}
			info, aus := accessUnits(t, path)
			if info.Codec != c.codec {
				t.Fatalf("codec %v", info.Codec)
			}
			dec := &codec.Decoder{Codec: info.Codec}
			if err := dec.Init(); err != nil {
				t.Fatal(err)
			}
			frames, errs := run(t, dec, aus, true)
			if len(errs) > 0 || len(frames) != 10 || dec.Stats().Converted != 10 {
				t.Fatalf("%d frames, errors %v, stats %+v", len(frames), errs, dec.Stats())
			}
			want := ffmpegFrames(t, path, 1, 176, 144)[0]
			diff := 0
			for i := range want {
				d := int(want[i]) - int(frames[0].yuv[i])
				diff = max(diff, d, -d)
			}
			if diff > 3 { // swscale's dithering differs between the CLI's and our settings
				t.Fatalf("converted picture differs from ffmpeg's by up to %d", diff)
			}
			if err := dec.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWallclockFollowsReordering checks that capture times follow their pictures through
// B-frame reordering.
func TestWallclockFollowsReordering(t *testing.T) {
	info, aus := accessUnits(t, asset(t, "videos/one-by-one-person-detection.mp4"))
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	aus = aus[:100]
	for i := range aus {
		aus[i].Wallclock = base.Add(aus[i].PTS)
	}
	dec := &codec.Decoder{Codec: info.Codec}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	frames, _ := run(t, dec, aus, false)
	for _, f := range frames {
		if !f.wall.Equal(base.Add(f.pts)) {
			t.Fatalf("frame at %v has wallclock %v", f.pts, f.wall)
		}
	}
}

// TestFlushThenReuse decodes a stream twice with one decoder.
func TestFlushThenReuse(t *testing.T) {
	info, aus := accessUnits(t, asset(t, "videos/person-bicycle-car_hevc.mp4"))
	dec := &codec.Decoder{Codec: info.Codec}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for pass := 0; pass < 2; pass++ {
		frames, errs := run(t, dec, aus, false)
		if len(frames) != 460 || len(errs) > 0 {
			t.Fatalf("pass %d: %d frames, %v", pass, len(frames), errs)
		}
	}
}

func TestInitErrors(t *testing.T) {
	dec := &codec.Decoder{Codec: media.CodecUnknown}
	if err := dec.Init(); err == nil {
		t.Fatal("Init of an unknown codec succeeded")
	}
	if err := dec.Decode(context.Background(), &media.AccessUnit{Key: true, Data: []byte{0, 0, 1}}, nil); err == nil {
		t.Fatal("Decode without Init succeeded")
	}
	if err := dec.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeAllocs measures heap allocations per decoded access unit in steady state (source
// Read included).
func TestDecodeAllocs(t *testing.T) {
	src := &file.Source{Path: asset(t, "videos/one-by-one-person-detection.mp4"), Loop: true}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dec := &codec.Decoder{Codec: src.Info().Codec}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	ctx := context.Background()
	emit := func(f *frame.Frame) error { f.Release(); return nil }
	step := func() {
		au, err := src.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := dec.Decode(ctx, au, emit); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		step()
	}
	allocs := testing.AllocsPerRun(300, step)
	t.Logf("%.3f allocations per access unit", allocs)
	if allocs > 0 {
		t.Fatalf("%v allocations per access unit", allocs)
	}
}
