package file

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/internal/sourcetest"
	"github.com/vinfer/vinfer/media"
)

// clips are the repository's videos with the facts of assets/MANIFEST.md §3: access units in
// the container (decoded frames plus edit-list pre-roll), discarded pre-roll units, key frames.
var clips = []struct {
	name            string
	codec           media.Codec
	aus, discard    int
	keys            int
	frames          int64 // container count in Info (0: none, MPEG-TS)
	fps             float64
	durMin, durMax  time.Duration
	firstPTS, width int
}{
	{"car-detection.mp4", media.CodecH264, 377, 0, 7, 377, 12.5, 30 * time.Second, 31 * time.Second, 0, 768},
	{"one-by-one-person-detection.mp4", media.CodecH264, 1394, 0, 140, 1394, 10, 139 * time.Second, 140 * time.Second, 0, 768},
	{"person-bicycle-car-detection_reenc.mp4", media.CodecH264, 467, 8, 8, 467, 12, 38 * time.Second, 39 * time.Second, 0, 768},
	{"person-bicycle-car_hevc.mp4", media.CodecH265, 460, 0, 4, 460, 12, 38 * time.Second, 39 * time.Second, 0, 768},
	{"car-detection_remux.ts", media.CodecH264, 377, 0, 7, 0, 12.5, 30 * time.Second, 31 * time.Second, 0, 768},
}

// nalTypes returns the NAL unit types of an Annex-B access unit, failing on data that does
// not start with a start code.
func nalTypes(t *testing.T, c media.Codec, au []byte) []int {
	t.Helper()
	if !bytes.HasPrefix(au, []byte{0, 0, 1}) && !bytes.HasPrefix(au, []byte{0, 0, 0, 1}) {
		t.Fatalf("access unit does not start with an Annex-B start code: % x", au[:min(8, len(au))])
	}
	var types []int
	for rest := au; len(rest) > 0; {
		var nalu []byte
		nalu, rest = h26x.NextNALU(rest)
		if len(nalu) == 0 {
			continue
		}
		if c == media.CodecH265 {
			types = append(types, int(nalu[0]>>1)&0x3F)
		} else {
			types = append(types, int(nalu[0])&0x1F)
		}
	}
	return types
}

func hasAll(have []int, want ...int) bool {
	for _, w := range want {
		found := false
		for _, h := range have {
			found = found || h == w
		}
		if !found {
			return false
		}
	}
	return true
}

func paramSetTypes(c media.Codec) []int {
	if c == media.CodecH265 {
		return []int{32, 33, 34} // VPS, SPS, PPS (ITU-T H.265 Table 7-1)
	}
	return []int{7, 8} // SPS, PPS (ITU-T H.264 Table 7-1)
}

func TestClips(t *testing.T) {
	for _, c := range clips {
		t.Run(c.name, func(t *testing.T) {
			s := &Source{Path: sourcetest.Asset(t, "videos/"+c.name)}
			if err := s.Init(); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			info := s.Info()
			if info.Codec != c.codec || info.Width != c.width || info.Height != 432 ||
				info.FrameRate != c.fps || info.Frames != c.frames ||
				info.Duration < c.durMin || info.Duration > c.durMax {
				t.Errorf("info %+v", info)
			}
			if s.Live() {
				t.Error("a file is not live")
			}
			var aus, keys, discard int
			var lastDTS, maxPTS time.Duration
			for {
				au, err := s.Read(context.Background())
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				types := nalTypes(t, c.codec, au.Data)
				if au.Codec != c.codec {
					t.Fatalf("au %d: codec %v", aus, au.Codec)
				}
				if aus == 0 && (!au.Key || !hasAll(types, paramSetTypes(c.codec)...)) {
					t.Fatalf("first access unit: key %v, NAL types %v", au.Key, types)
				}
				if au.Key {
					keys++
					if !hasAll(types, paramSetTypes(c.codec)...) {
						t.Errorf("key access unit %d lacks parameter sets: NAL types %v", aus, types)
					}
				}
				if aus > 0 && au.DTS <= lastDTS {
					t.Errorf("au %d: DTS %v after %v", aus, au.DTS, lastDTS)
				}
				if au.DTS > au.PTS {
					t.Errorf("au %d: DTS %v after PTS %v", aus, au.DTS, au.PTS)
				}
				if au.Discard {
					discard++
				} else if au.PTS < 0 {
					t.Errorf("au %d: PTS %v before the start", aus, au.PTS)
				}
				lastDTS, maxPTS = au.DTS, max(maxPTS, au.PTS)
				aus++
			}
			if aus != c.aus || keys != c.keys || discard != c.discard {
				t.Errorf("%d access units (%d key, %d discard), want %d (%d, %d)", aus, keys, discard,
					c.aus, c.keys, c.discard)
			}
			if want := time.Duration(float64(c.aus-c.discard-1) / c.fps * float64(time.Second)); maxPTS < want-time.Millisecond || maxPTS > want+time.Millisecond {
				t.Errorf("last PTS %v, want %v", maxPTS, want)
			}
			if _, err := s.Read(context.Background()); err != io.EOF {
				t.Errorf("Read after the end: %v", err)
			}
		})
	}
}

func TestLoop(t *testing.T) {
	for _, name := range []string{"one-by-one-person-detection.mp4", "car-detection_remux.ts", "person-bicycle-car_hevc.mp4"} {
		t.Run(name, func(t *testing.T) {
			s := &Source{Path: sourcetest.Asset(t, "videos/"+name), Loop: true}
			if err := s.Init(); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			frameDur := time.Duration(float64(time.Second) / s.Info().FrameRate)
			var lastDTS, maxPTS time.Duration
			passStart := -1 * time.Hour
			n := 0
			for s.Loops() < 3 {
				loops := s.Loops()
				au, err := s.Read(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if s.Loops() != loops { // first unit of a new pass
					if !au.Key {
						t.Fatalf("pass %d starts without a key frame", s.Loops())
					}
					if d := au.PTS - maxPTS; d < frameDur-time.Microsecond || d > frameDur+time.Microsecond {
						t.Errorf("pass %d starts %v after the previous pass's last PTS, want %v", s.Loops(), d, frameDur)
					}
					passStart = au.PTS
				}
				if n > 0 && au.DTS <= lastDTS {
					t.Fatalf("au %d (pass %d): DTS %v after %v", n, s.Loops(), au.DTS, lastDTS)
				}
				if au.PTS < passStart {
					t.Fatalf("au %d: PTS %v before its pass's start %v", n, au.PTS, passStart)
				}
				lastDTS, maxPTS = au.DTS, max(maxPTS, au.PTS)
				n++
			}
		})
	}
}

// rawStream remuxes the first frames (0: all) of a repository clip into a raw Annex-B
// elementary stream (name ends in .h264 or .h265) with ffmpeg, which puts the parameter sets
// in-band (h264_mp4toannexb / hevc_mp4toannexb).
func rawStream(t *testing.T, clip, name string, frames int) string {
	t.Helper()
	ffmpeg := sourcetest.Tool(t, "ffmpeg")
	path := filepath.Join(t.TempDir(), name)
	args := []string{"-v", "error", "-nostdin", "-i", sourcetest.Asset(t, "videos/"+clip), "-map", "0:v:0", "-c", "copy"}
	if frames > 0 {
		args = append(args, "-frames:v", strconv.Itoa(frames))
	}
	args = append(args, "-f", map[string]string{".h264": "h264", ".h265": "hevc"}[filepath.Ext(name)], path)
	if out, err := exec.Command(ffmpeg, args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return path
}

// TestLoopRaw: a raw Annex-B stream (no container, no timestamps, not seekable by time)
// loops: three passes give three times the file's access units, each pass the same units as
// the first, starting with a key frame, with PTS and DTS strictly increasing across passes
// at the stream's frame rate.
func TestLoopRaw(t *testing.T) {
	for _, c := range []struct{ clip, name string }{
		{"car-detection.mp4", "clip.h264"},
		{"person-bicycle-car_hevc.mp4", "clip.h265"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := rawStream(t, c.clip, c.name, 0)
			ref := readAll(t, path)
			s := &Source{Path: path, Loop: true}
			if err := s.Init(); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !s.Info().PTSInDecodeOrder {
				t.Fatal("raw stream's PTS not reported as a decoding-order count (PTSInDecodeOrder)")
			}
			frameDur := time.Duration(float64(time.Second) / s.Info().FrameRate)
			var lastPTS, lastDTS time.Duration
			for i := range 3 * len(ref) {
				au, err := s.Read(context.Background())
				if err != nil {
					t.Fatalf("au %d: %v", i, err)
				}
				pass, k := i/len(ref), i%len(ref)
				if s.Loops() != pass {
					t.Fatalf("au %d: %d loops, want %d (the file has %d access units)", i, s.Loops(), pass, len(ref))
				}
				if k == 0 && !au.Key {
					t.Fatalf("pass %d starts without a key frame", pass)
				}
				if !sameNALUs(au.Data, ref[k]) {
					t.Fatalf("pass %d: access unit %d differs from the first pass's", pass, k)
				}
				if i > 0 {
					if au.PTS <= lastPTS || au.DTS <= lastDTS {
						t.Fatalf("au %d (pass %d): PTS %v DTS %v after %v %v", i, pass, au.PTS, au.DTS, lastPTS, lastDTS)
					}
					if d := au.DTS - lastDTS; d < frameDur-time.Microsecond || d > frameDur+time.Microsecond {
						t.Fatalf("au %d (pass %d): DTS step %v, want one frame (%v)", i, pass, d, frameDur)
					}
				}
				lastPTS, lastDTS = au.PTS, au.DTS
			}
			t.Logf("%d access units a pass, 3 passes, last PTS %v", len(ref), lastPTS)
		})
	}
}

func TestBadInputs(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("not a video\njust some text\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.mp4")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// person-bicycle-car-detection_reenc.mp4 has its moov box at the end: half of it is an MP4
	// without index, as left by a recording that was cut off.
	whole, err := os.ReadFile(sourcetest.Asset(t, "videos/person-bicycle-car-detection_reenc.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	noMoov := filepath.Join(dir, "no-moov.mp4")
	if err := os.WriteFile(noMoov, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		want       []string
	}{
		{"missing", filepath.Join(dir, "nope.mp4"), []string{"nope.mp4", "no such file", "check the path"}},
		{"directory", dir, []string{"is a directory"}},
		{"text", text, []string{"notes.txt", "not a media file", "give a video file"}},
		{"empty", empty, []string{"empty.mp4", "empty"}},
		{"moov missing", noMoov, []string{"no-moov.mp4", "moov", "truncated", "faststart"}},
		{"no path", "", []string{"no path"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := &Source{Path: c.path}
			err := s.Init()
			if err == nil {
				t.Fatal("Init succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Read(context.Background()); err == nil {
				t.Fatal("Read after a failed Init succeeded")
			}
		})
	}
}

// TestTruncatedData cuts an MP4 whose index is at the front: the index is intact but the data
// it points to is gone, which Read reports instead of a silent early end.
func TestTruncatedData(t *testing.T) {
	whole, err := os.ReadFile(sourcetest.Asset(t, "videos/car-detection.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.mp4")
	if err := os.WriteFile(cut, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	s := &Source{Path: cut}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for {
		_, err = s.Read(context.Background())
		if err != nil {
			break
		}
		n++
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "cut short") {
		t.Fatalf("after %d access units: %v", n, err)
	}
}

// TestOtherStreams uses ffmpeg to make files without H.264/H.265 video.
func TestOtherStreams(t *testing.T) {
	ffmpeg := sourcetest.Tool(t, "ffmpeg")
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"audio.m4a", []string{"-f", "lavfi", "-i", "sine=duration=0.5", "-c:a", "aac"},
			[]string{"audio.m4a", "no video stream"}},
		{"mpeg4.mkv", []string{"-f", "lavfi", "-i", "testsrc=duration=0.5:size=64x48", "-c:v", "mpeg4"},
			[]string{"mpeg4.mkv", "mpeg4", "not supported", "H.264"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			args := append(append([]string{"-v", "error", "-y"}, c.args...), path)
			if out, err := exec.Command(ffmpeg, args...).CombinedOutput(); err != nil {
				t.Fatalf("ffmpeg: %v\n%s", err, out)
			}
			s := &Source{Path: path}
			defer s.Close()
			err := s.Init()
			if err == nil {
				t.Fatal("Init succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestMatroska remuxes a clip into MKV (length-prefixed NAL units, like MP4) and into a raw
// H.265 Annex-B stream, and checks both deliver the same access units as the MP4.
func TestMatroskaAndRaw(t *testing.T) {
	ffmpeg := sourcetest.Tool(t, "ffmpeg")
	src := sourcetest.Asset(t, "videos/person-bicycle-car_hevc.mp4")
	ref := readAll(t, src)
	dir := t.TempDir()
	for _, name := range []string{"clip.mkv", "clip.hevc"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			if out, err := exec.Command(ffmpeg, "-v", "error", "-i", src, "-c", "copy", path).CombinedOutput(); err != nil {
				t.Fatalf("ffmpeg: %v\n%s", err, out)
			}
			got := readAll(t, path)
			if len(got) != len(ref) {
				t.Fatalf("%d access units, want %d", len(got), len(ref))
			}
			for i := range got {
				if !sameNALUs(got[i], ref[i]) {
					t.Fatalf("access unit %d differs from the MP4's", i)
				}
			}
		})
	}
}

// sameNALUs compares two Annex-B access units NAL unit by NAL unit (start code lengths and
// trailing zero bytes may differ).
func sameNALUs(a, b []byte) bool {
	for len(a) > 0 || len(b) > 0 {
		var na, nb []byte
		na, a = h26x.NextNALU(a)
		nb, b = h26x.NextNALU(b)
		if !bytes.Equal(na, nb) {
			return false
		}
	}
	return true
}

func readAll(t *testing.T, path string) [][]byte {
	t.Helper()
	s := &Source{Path: path}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var aus [][]byte
	for {
		au, err := s.Read(context.Background())
		if err == io.EOF {
			return aus
		}
		if err != nil {
			t.Fatal(err)
		}
		aus = append(aus, bytes.Clone(au.Data))
	}
}

func TestParamSetInsertion(t *testing.T) {
	sps, pps := []byte{0x67, 0x42, 0x00, 0x1f}, []byte{0x68, 0xce}
	idr, aud := []byte{0x65, 0x88, 0x80}, []byte{0x09, 0xf0}
	annexb := func(nalus ...[]byte) []byte {
		var b []byte
		for _, n := range nalus {
			b = append(append(b, 0, 0, 0, 1), n...)
		}
		return b
	}
	var p paramSets
	p.init(media.CodecH264, annexb(sps, pps))
	if got := p.complete(annexb(aud, idr)); !bytes.Equal(got, annexb(sps, pps, aud, idr)) {
		t.Errorf("missing sets: % x", got)
	}
	full := annexb(aud, sps, pps, idr)
	if got := p.complete(full); &got[0] != &full[0] {
		t.Errorf("complete unit was copied")
	}
	if got := p.complete(annexb(pps, idr)); !bytes.Equal(got, annexb(sps, pps, pps, idr)) {
		t.Errorf("missing SPS: % x", got)
	}
	var none paramSets
	none.init(media.CodecH264, nil)
	if got := none.complete(annexb(idr)); !bytes.Equal(got, annexb(idr)) {
		t.Errorf("no extradata: % x", got)
	}
}

func TestCancel(t *testing.T) {
	s := &Source{Path: sourcetest.Asset(t, "videos/car-detection.mp4")}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Read(ctx); err != context.Canceled {
		t.Fatalf("Read with a cancelled context: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadAllocs checks that Read allocates nothing in steady state, for a filtered (MP4) and
// a passed-through (MPEG-TS) stream.
func TestReadAllocs(t *testing.T) {
	for _, name := range []string{"one-by-one-person-detection.mp4", "car-detection_remux.ts"} {
		t.Run(name, func(t *testing.T) {
			s := &Source{Path: sourcetest.Asset(t, "videos/"+name), Loop: true}
			if err := s.Init(); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			for i := 0; i < 50; i++ { // warm up: buffers grow to their steady size
				if _, err := s.Read(ctx); err != nil {
					t.Fatal(err)
				}
			}
			allocs := testing.AllocsPerRun(500, func() {
				if _, err := s.Read(ctx); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("%v allocations per Read", allocs)
			}
		})
	}
}

func BenchmarkRead(b *testing.B) {
	s := &Source{Path: sourcetest.Asset(b, "videos/one-by-one-person-detection.mp4"), Loop: true}
	if err := s.Init(); err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	b.ReportAllocs()
	var bytes int64
	for b.Loop() {
		au, err := s.Read(ctx)
		if err != nil {
			b.Fatal(err)
		}
		bytes += int64(len(au.Data))
	}
	b.SetBytes(bytes / int64(max(b.N, 1)))
}

// TestRealtime: with Realtime a looping file is a stand-in camera: live, and read no faster
// than its timestamps (a lower bound only: a loaded machine may be slower, never faster).
// A raw Annex-B stream of 8 frames is paced the same way across its loops.
func TestRealtime(t *testing.T) {
	for _, name := range []string{"car-detection.mp4", "car-8.h264"} {
		t.Run(name, func(t *testing.T) {
			var path string
			if filepath.Ext(name) == ".h264" {
				path = rawStream(t, "car-detection.mp4", name, 8)
			} else {
				path = sourcetest.Asset(t, "videos/"+name)
			}
			s := &Source{Path: path, Loop: true, Realtime: true} // 12.5 fps
			if err := s.Init(); err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if !s.Live() || (&Source{}).Live() {
				t.Fatal("Live should follow Realtime")
			}
			start := time.Now()
			var first, last time.Duration
			for i := range 20 {
				au, err := s.Read(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = au.DTS
				}
				last = au.DTS
			}
			took, span := time.Since(start), last-first
			if span < 1500*time.Millisecond || took < span {
				t.Fatalf("20 access units spanning %v read in %v (%d loops)", span, took, s.Loops())
			}
			t.Logf("20 access units spanning %v read in %v (%d loops)", span, took, s.Loops())
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := s.Read(ctx); !errors.Is(err, context.Canceled) {
				t.Fatalf("Read with a cancelled context: %v", err)
			}
		})
	}
}

// TestPacer: timestamps are released no earlier than their time; a jump ahead or a reader far
// behind re-anchors instead of stalling or bursting.
func TestPacer(t *testing.T) {
	var p Pacer
	ctx := context.Background()
	start := time.Now()
	for _, ts := range []time.Duration{0, 20 * time.Millisecond, 40 * time.Millisecond} {
		if err := p.Wait(ctx, ts); err != nil {
			t.Fatal(err)
		}
	}
	if took := time.Since(start); took < 40*time.Millisecond {
		t.Fatalf("three timestamps 20 ms apart released in %v", took)
	}
	start = time.Now()
	if err := p.Wait(ctx, time.Hour); err != nil { // a jump: re-anchored, not waited for
		t.Fatal(err)
	}
	if err := p.Wait(ctx, time.Hour+30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 30*time.Millisecond || took > 5*time.Minute {
		t.Fatalf("after a jump: %v", took)
	}
	p = Pacer{MaxLag: time.Millisecond}
	p.Wait(ctx, 0)
	p.Wait(ctx, -time.Hour) // far behind: re-anchored at -1 h
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := p.Wait(cctx, -time.Hour+time.Minute); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
}
