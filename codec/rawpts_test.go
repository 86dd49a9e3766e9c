package codec_test

import (
	"bytes"
	"context"
	"errors"
	"hash/crc32"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/file"
)

// rawClip is a clip with B-frames (H.264 Main, 10 fps, a key frame every 10) and the number
// of its first access units (decoding order) a test uses: whole GOPs, so that every picture
// of the cut is shown and its MP4 PTS are consecutive.
const (
	rawClip   = "videos/one-by-one-person-detection.mp4"
	rawFrames = 60
)

// rawStream cuts the first n access units of the asset rel into a raw Annex-B .h264 file
// (FFmpeg -c copy, mp4toannexb): no timestamps.
func rawStream(t testing.TB, rel string, n int) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "clip.h264")
	out, err := exec.Command(tool(t, "ffmpeg"), "-v", "error", "-nostdin", "-i", asset(t, rel), "-map", "0:v:0",
		"-c", "copy", "-bsf:v", "h264_mp4toannexb", "-frames:v", strconv.Itoa(n), "-f", "h264", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg: %v\n%s", err, out)
	}
	return dst
}

// shown is a frame's PTS and a checksum of its pixels.
type shown struct {
	pts time.Duration
	sum uint32
}

// decodeSums decodes aus (and flushes) with a new Decoder, returning PTS and pixel checksums
// of the frames and the Decoder's stats.
func decodeSums(t testing.TB, c media.Codec, reorder bool, aus []media.AccessUnit, damaged map[int]bool) ([]shown, codec.Stats) {
	return decodeSumsThreads(t, c, reorder, 1, aus, damaged)
}

func decodeSumsThreads(t testing.TB, c media.Codec, reorder bool, threads int, aus []media.AccessUnit, damaged map[int]bool) ([]shown, codec.Stats) {
	t.Helper()
	dec := &codec.Decoder{Codec: c, ReorderPTS: reorder, Threads: threads}
	if err := dec.Init(); err != nil {
		t.Fatal(err)
	}
	var out []shown
	emit := func(f *frame.Frame) error {
		out = append(out, shown{f.PTS, crc32.ChecksumIEEE(pack(f))})
		f.Release()
		return nil
	}
	ctx := context.Background()
	for i := range aus {
		if err := dec.Decode(ctx, &aus[i], emit); err != nil && !(damaged[i] && errors.Is(err, codec.ErrCorrupt)) {
			t.Fatalf("access unit %d: %v", i, err)
		}
	}
	if err := dec.Flush(ctx, emit); err != nil {
		t.Fatal(err)
	}
	st := dec.Stats()
	if err := dec.Close(); err != nil {
		t.Fatal(err)
	}
	return out, st
}

// consecutive fails unless the PTS go up by one frame from the first.
func consecutive(t testing.TB, what string, frames []shown, first, step time.Duration) {
	t.Helper()
	for i, f := range frames {
		if want := first + time.Duration(i)*step; f.pts < want-time.Microsecond || f.pts > want+time.Microsecond {
			t.Fatalf("%s: frame %d has PTS %v, want %v (one frame of %v apart)", what, i, f.pts, want, step)
		}
	}
}

// TestReorderPTSRaw: a raw .h264 stream with B-frames carries PTS that count access units in
// decoding order; with ReorderPTS (what source/file's PTSInDecodeOrder asks for) its frames
// get the PTS the MP4 gives the same pictures: consecutive, in presentation order.
func TestReorderPTSRaw(t *testing.T) {
	info, mp4 := accessUnits(t, asset(t, rawClip))
	if info.PTSInDecodeOrder {
		t.Fatal("an MP4's PTS reported as a decoding-order count")
	}
	step := time.Duration(float64(time.Second) / info.FrameRate)
	want, _ := decodeSums(t, info.Codec, false, mp4[:rawFrames], nil)
	if len(want) != rawFrames {
		t.Fatalf("the MP4's first %d access units give %d frames", rawFrames, len(want))
	}
	consecutive(t, "MP4", want, 0, step)

	rinfo, raw := accessUnits(t, rawStream(t, rawClip, rawFrames))
	if !rinfo.PTSInDecodeOrder || rinfo.FrameRate != info.FrameRate {
		t.Fatalf("raw stream info %+v: want PTSInDecodeOrder at %v fps", rinfo, info.FrameRate)
	}
	plain, _ := decodeSums(t, rinfo.Codec, false, raw, nil)
	inOrder := true
	for i := 1; i < len(plain); i++ {
		inOrder = inOrder && plain[i].pts > plain[i-1].pts
	}
	if inOrder {
		t.Fatal("raw stream's frames in presentation order without ReorderPTS: the clip lost its B-frames?")
	}
	for _, threads := range []int{1, 4} { // frame threading delays output by threads-1 frames
		got, st := decodeSumsThreads(t, rinfo.Codec, true, threads, raw, nil)
		if len(got) != len(want) || st.StalePTS != 0 {
			t.Fatalf("%d threads: %d frames (%d stale PTS), want %d", threads, len(got), st.StalePTS, len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%d threads: frame %d: PTS %v checksum %08x, the MP4's %v %08x", threads, i, got[i].pts, got[i].sum, want[i].pts, want[i].sum)
			}
		}
	}
}

// TestReorderPTSLoop: a looped raw stream's frames stay one frame apart across the restarts
// (source/file offsets each pass; the decoder is not flushed between passes).
func TestReorderPTSLoop(t *testing.T) {
	const passes = 3
	s := &file.Source{Path: rawStream(t, rawClip, rawFrames), Loop: true}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var aus []media.AccessUnit
	for len(aus) < passes*rawFrames {
		au, err := s.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		c := *au
		c.Data = bytes.Clone(au.Data)
		aus = append(aus, c)
	}
	if s.Loops() != passes-1 {
		t.Fatalf("%d loops after %d access units, want %d", s.Loops(), len(aus), passes-1)
	}
	step := time.Duration(float64(time.Second) / s.Info().FrameRate)
	got, _ := decodeSums(t, s.Info().Codec, true, aus, nil)
	if len(got) != passes*rawFrames {
		t.Fatalf("%d frames, want %d", len(got), passes*rawFrames)
	}
	consecutive(t, "looped raw stream", got, 0, step)
	for i := rawFrames; i < len(got); i++ {
		if got[i].sum != got[i%rawFrames].sum {
			t.Fatalf("frame %d differs from frame %d of the first pass", i, i%rawFrames)
		}
	}
}

// TestReorderPTSCorrupt: pictures dropped as damaged (ErrCorrupt) take their stamps with them:
// the frames left keep increasing, and from the next key frame on carry exactly the PTS of a
// clean decode.
func TestReorderPTSCorrupt(t *testing.T) {
	info, clean := accessUnits(t, rawStream(t, rawClip, rawFrames))
	want, _ := decodeSums(t, info.Codec, true, clean, nil)
	bad := make([]media.AccessUnit, len(clean))
	copy(bad, clean)
	damaged := map[int]bool{}
	seed := uint32(1)
	// non-key access units of the second and third GOP: garbage in the slice data is concealed
	// (the picture dropped, ErrCorrupt), in the slice header rejected (no picture)
	for _, c := range []struct{ i, from int }{{13, 3}, {16, 1}, {27, 3}} {
		i, from := c.i, c.from
		if bad[i].Key {
			t.Fatalf("access unit %d is a key frame", i)
		}
		d := bytes.Clone(bad[i].Data)
		for k := len(d) * from / 4; k < len(d); k++ {
			seed = seed*1664525 + 1013904223 // LCG: reproducible garbage
			d[k] = byte(seed >> 24)
		}
		bad[i].Data = d
		damaged[i] = true
	}
	got, st := decodeSums(t, info.Codec, true, bad, damaged)
	t.Logf("%d frames of %d; stats %+v", len(got), len(want), st)
	if st.Concealed == 0 || st.Rejected == 0 || int64(len(got))+st.Concealed+st.Rejected != int64(len(want)) {
		t.Fatalf("%d frames, %d concealed, %d rejected: want both kinds of loss, adding up to %d", len(got), st.Concealed, st.Rejected, len(want))
	}
	for i := 1; i < len(got); i++ {
		if got[i].pts <= got[i-1].pts {
			t.Fatalf("frame %d: PTS %v after %v", i, got[i].pts, got[i-1].pts)
		}
	}
	resume := 30 * time.Duration(float64(time.Second)/info.FrameRate) // the key frame after the damage
	var tail []shown
	for _, f := range got {
		if f.pts >= resume {
			tail = append(tail, f)
		}
	}
	var wantTail []shown
	for _, f := range want {
		if f.pts >= resume {
			wantTail = append(wantTail, f)
		}
	}
	if len(tail) != len(wantTail) {
		t.Fatalf("%d frames from %v on, want %d", len(tail), resume, len(wantTail))
	}
	for i := range tail {
		if tail[i] != wantTail[i] {
			t.Fatalf("after the damage, frame at %v (%08x) differs from the clean decode's %v (%08x)",
				tail[i].pts, tail[i].sum, wantTail[i].pts, wantTail[i].sum)
		}
	}
}
