package decpool_test

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/decpool"
	"github.com/vinfer/vinfer/frame"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/source/file"
)

// camera is one stream's access units and what a plain decode of them gives: a checksum of
// every plane of each picture, by PTS.
type camera struct {
	name string
	aus  []media.AccessUnit
	keys []int
	want map[time.Duration]uint32
	// lumaWant: checksums of the luma planes only (to compare with NVDEC's NV12)
	lumaWant map[time.Duration]uint32
}

// planes returns a checksum of f's visible pixels, every plane (8-bit 4:2:0).
func planes(f *frame.Frame) uint32 {
	h := crc32.NewIEEE()
	cw, ch := (f.Width+1)/2, (f.Height+1)/2
	rows := func(k, w, n int) {
		for y := 0; y < n; y++ {
			h.Write(f.Planes[k][y*f.Strides[k] : y*f.Strides[k]+w])
		}
	}
	rows(0, f.Width, f.Height)
	if f.Format == frame.FormatNV12 {
		rows(1, 2*cw, ch)
	} else {
		rows(1, cw, ch)
		rows(2, cw, ch)
	}
	return h.Sum32()
}

// loadCamera reads up to 300 access units of path through source/file and decodes them plainly.
func loadCamera(t *testing.T, path string) *camera {
	t.Helper()
	src := &file.Source{Path: path}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := &camera{name: filepath.Base(path), want: map[time.Duration]uint32{}, lumaWant: map[time.Duration]uint32{}}
	for len(c.aus) < 300 {
		au, err := src.Read(context.Background())
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		u := *au
		u.Data = bytes.Clone(au.Data)
		if u.Key {
			c.keys = append(c.keys, len(c.aus))
		}
		c.aus = append(c.aus, u)
	}
	if len(c.keys) < 2 {
		t.Fatalf("%s: %d key frames", c.name, len(c.keys))
	}
	d := &codec.Decoder{Codec: c.aus[0].Codec}
	if err := d.Init(); err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	emit := func(f *frame.Frame) error {
		c.want[f.PTS] = planes(f)
		c.lumaWant[f.PTS] = luma(f)
		f.Release()
		return nil
	}
	for i := range c.aus {
		if err := d.Decode(context.Background(), &c.aus[i], emit); err != nil {
			t.Fatalf("%s access unit %d: %v", c.name, i, err)
		}
	}
	if err := d.Flush(context.Background(), emit); err != nil {
		t.Fatal(err)
	}
	shown := c.keys[:0] // key frames shown (an edit list may discard the first)
	for _, k := range c.keys {
		if _, ok := c.want[c.aus[k].PTS]; ok && !c.aus[k].Discard {
			shown = append(shown, k)
		}
	}
	c.keys = shown
	return c
}

// probeRounds probes the key frames of the cameras in turn (camera 0's first, camera 1's
// first, ..., camera 0's second, ...) on pool's shared decoders, each picture compared with the
// plain decode's; it returns the number of probes.
func probeRounds(t *testing.T, pool *decpool.Pool, k decpool.Key, cams ...*camera) int {
	t.Helper()
	n := 0
	for r := 0; ; r++ {
		more := false
		for _, c := range cams {
			if r >= len(c.keys) {
				continue
			}
			more = true
			au := c.aus[c.keys[r]]
			var got []uint32
			var pts []time.Duration
			err := pool.Probe(context.Background(), k, &au, func(f *frame.Frame) error {
				got = append(got, planes(f))
				pts = append(pts, f.PTS)
				f.Release()
				return nil
			})
			n++
			if err != nil {
				t.Fatalf("%s key frame %d: %v", c.name, r, err)
			}
			if len(got) != 1 || pts[0] != au.PTS || got[0] != c.want[au.PTS] {
				t.Fatalf("%s key frame %d at %v: pictures at %v (sums %x), want one at %v (sum %x)", c.name, r, au.PTS, pts, got, au.PTS, c.want[au.PTS])
			}
		}
		if !more {
			return n
		}
	}
}

// encode makes an H.264 clip with x264 (B-frames, max_num_reorder_frames 2 in its SPS, as x264
// writes: the decoder holds each picture back for reordering) from ffmpeg input args.
func encode(t *testing.T, name string, args ...string) string {
	t.Helper()
	if _, err := exec.LookPath("ffmpeg"); err != nil {
		t.Skip("needs the ffmpeg CLI")
	}
	path := filepath.Join(t.TempDir(), name)
	args = append([]string{"-v", "error", "-nostdin"}, args...)
	args = append(args, "-an", "-c:v", "libx264", "-preset", "veryfast", "-bf", "2", "-g", "10", "-pix_fmt", "yuv420p", path)
	if out, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, out)
	}
	return path
}

// TestProbeKeepsDecoder: the key frames of three cameras of one size (x264 with B-frames, whose
// pictures the decoder holds back for reordering, and two without, of other profiles and
// parameter sets), probed in turn on one shared decoder, each come out as the same picture as a plain
// decode of its camera gives, with no drain to the end of stream and no new set-up of the
// decoder after the first (an H.264 reset frees FFmpeg's decoder: NVDEC's surfaces and CUVID
// decoder made again per probe); the pictures held back are pushed out (ProbePushes). Probing
// the old way (Config.Drain) drains and sets the decoder up again on every probe.
func TestProbeKeepsDecoder(t *testing.T) {
	cams := []*camera{
		loadCamera(t, encode(t, "b.mp4", "-t", "3", "-i", testutil.Asset(t, "videos/one-by-one-person-detection.mp4"))),
		loadCamera(t, testutil.Asset(t, "videos/car-detection.mp4")),
		loadCamera(t, testutil.Asset(t, "videos/person-bicycle-car-detection_reenc.mp4")),
	}
	for _, drain := range []bool{false, true} {
		t.Run(fmt.Sprintf("drain=%v", drain), func(t *testing.T) {
			pool, err := decpool.New(decpool.Config{New: ffmpeg(t), Probers: 1, Warm: -1, Drain: drain})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			n := int64(probeRounds(t, pool, sample, cams...))
			st := pool.Stats()
			t.Logf("%d probes: %+v", n, st)
			switch {
			case st.Created != 1 || st.Probes != n:
				t.Errorf("stats %+v: want %d probes on one decoder", st, n)
			case drain && (st.ProbeDrains != n || st.ProbeSetups != n):
				t.Errorf("old way: %d drains, %d set-ups for %d probes; want one each per probe", st.ProbeDrains, st.ProbeSetups, n)
			case !drain && (st.ProbeDrains != 0 || st.ProbeSetups != 1 || st.ProbePushes == 0):
				t.Errorf("%d drains, %d set-ups, %d pushes for %d probes; want no drain, the first set-up only, some pushed out", st.ProbeDrains, st.ProbeSetups, st.ProbePushes, n)
			}
		})
	}
}

// TestProbeNewSize: key frames of a camera with another picture size (320×240, B-frames),
// probed in turn with the sample's on one shared decoder (a stream's key of unknown size),
// come out right: the decoder is set up again for each change of size, and only then, and
// never drained.
func TestProbeNewSize(t *testing.T) {
	small := encode(t, "small.mp4", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "2")
	a := loadCamera(t, testutil.Asset(t, "videos/one-by-one-person-detection.mp4"))
	b := loadCamera(t, small)
	a.keys = a.keys[:min(len(a.keys), len(b.keys))]
	b.keys = b.keys[:len(a.keys)]
	pool, err := decpool.New(decpool.Config{New: ffmpeg(t), Probers: 1, Warm: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	n := int64(probeRounds(t, pool, decpool.Key{Codec: media.CodecH264}, a, b))
	if st := pool.Stats(); st.ProbeDrains != 0 || st.ProbeSetups != n || st.Created != 1 || st.ProbePushes == 0 {
		t.Errorf("%d probes alternating sizes: %+v; want a set-up per probe (each a new size), no drain, one decoder, pictures pushed out", n, st)
	}
}

// TestProbeH265Drains: H.265 key frames are probed the old way (FFmpeg's H.265 decoder puts
// out a lone picture only at the end of stream), counted as drains, and come out right.
func TestProbeH265Drains(t *testing.T) {
	c := loadCamera(t, testutil.Asset(t, "videos/person-bicycle-car_hevc.mp4"))
	pool, err := decpool.New(decpool.Config{New: ffmpeg(t), Probers: 1, Warm: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	n := int64(probeRounds(t, pool, decpool.Key{Codec: media.CodecH265}, c))
	if st := pool.Stats(); st.ProbeDrains != n || st.ProbePushes != 0 {
		t.Errorf("%d H.265 probes: %+v; want each drained", n, st)
	}
}

// TestParkKeepsDecoder: streams of two cameras (x264 with B-frames, whose pictures the decoder
// holds back for reordering, and one without) take turns on one decoder as they wake and go
// idle: each decodes a GOP on the decoder it was handed, parks it (every picture it held comes
// out) and gives it back; every picture equals the plain decode's, and the decoder was set up
// once in all. Draining with Flush instead (the old way) sets it up again at every wake.
func TestParkKeepsDecoder(t *testing.T) {
	b := loadCamera(t, encode(t, "b.mp4", "-t", "8", "-i", testutil.Asset(t, "videos/one-by-one-person-detection.mp4")))
	car := loadCamera(t, testutil.Asset(t, "videos/car-detection.mp4"))
	turns := []struct {
		c   *camera
		gop int
	}{{b, 0}, {b, 1}, {car, 0}, {b, 2}, {car, 1}, {b, 3}}
	for _, tn := range turns {
		if len(tn.c.keys) < tn.gop+2 {
			t.Fatalf("%s: %d key frames", tn.c.name, len(tn.c.keys))
		}
	}
	for _, flush := range []bool{false, true} {
		t.Run(fmt.Sprintf("flush=%v", flush), func(t *testing.T) {
			pool, err := decpool.New(decpool.Config{New: ffmpeg(t), Probers: 1, Warm: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			ctx := context.Background()
			k := decpool.Key{Codec: media.CodecH264, Width: 768, Height: 432}
			var first decpool.Decoder
			for turn, tn := range turns {
				d, err := pool.Take(ctx, k)
				if err != nil {
					t.Fatal(err)
				}
				if first == nil {
					first = d
				} else if d != first {
					t.Fatalf("turn %d: not handed the decoder given back", turn)
				}
				c, g := tn.c, tn.gop
				var pts []time.Duration
				emit := func(f *frame.Frame) error {
					if c.want[f.PTS] != planes(f) {
						t.Errorf("turn %d, %s GOP %d: picture at %v differs from the plain decode's", turn, c.name, g, f.PTS)
					}
					pts = append(pts, f.PTS)
					f.Release()
					return nil
				}
				for i := c.keys[g]; i < c.keys[g+1]; i++ {
					if err := d.Decode(ctx, &c.aus[i], emit); err != nil {
						t.Fatalf("turn %d, %s GOP %d access unit %d: %v", turn, c.name, g, i, err)
					}
				}
				if flush {
					err = d.Flush(ctx, emit)
				} else {
					err = d.(decpool.Parker).Park(ctx, emit)
				}
				if err != nil || len(pts) != c.keys[g+1]-c.keys[g] {
					t.Fatalf("turn %d, %s GOP %d: %v, %d pictures for %d access units", turn, c.name, g, err, len(pts), c.keys[g+1]-c.keys[g])
				}
				pool.Put(k, d, true)
			}
			setups := first.(interface{ Setups() int64 }).Setups()
			if want := map[bool]int64{false: 1, true: int64(len(turns))}[flush]; setups != want {
				t.Errorf("decoder set up %d times over %d wakes, want %d", setups, len(turns), want)
			}
		})
	}
}
