package record_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/record"
)

// frameMD5s returns the MD5 of each frame FFmpeg presents from path (edit lists honoured),
// in presentation order; args go before -i.
func frameMD5s(t testing.TB, path string, args ...string) []string {
	t.Helper()
	cmd := append([]string{"-v", "error"}, args...)
	cmd = append(cmd, "-i", path, "-map", "0:v:0", "-f", "framemd5", "-")
	out, err := exec.Command("ffmpeg", cmd...).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg framemd5 %s: %v\n%s", path, err, out)
	}
	var sums []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(l, "#") {
			sums = append(sums, f[len(f)-1])
		}
	}
	return sums
}

// formatDuration is ffprobe's format duration of path, seconds.
func formatDuration(t testing.TB, path string) float64 {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var v struct {
		Format struct {
			Duration string `json:"duration"`
		} `json:"format"`
	}
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatal(err)
	}
	d, err := strconv.ParseFloat(v.Format.Duration, 64)
	if err != nil {
		t.Fatalf("ffprobe %s: duration %q", path, v.Format.Duration)
	}
	return d
}

// recordClip records the first upto of the asset rel in 3 s segments and returns the recorder
// (closed), the units fed and the MD5 of each source frame by its PTS.
func recordClip(t *testing.T, rel string, upto time.Duration) (*record.Recorder, []media.AccessUnit, map[time.Duration]string) {
	t.Helper()
	units := readUnits(t, rel, upto)
	r := newRecorder(t, t.TempDir(), nil)
	feed(t, r, r.Observer("cam1"), units)
	r.Close()
	return r, units, sourceMD5s(t, rel, units, upto)
}

// sourceMD5s returns the MD5 of each source frame of units (read from the asset rel up to
// upto) by its PTS.
func sourceMD5s(t *testing.T, rel string, units []media.AccessUnit, upto time.Duration) map[time.Duration]string {
	t.Helper()
	pts := make([]time.Duration, len(units))
	for i := range units {
		pts[i] = units[i].PTS
	}
	slices.Sort(pts)
	// the source's frames in presentation order: the k-th has the k-th smallest PTS
	sums := frameMD5s(t, testutil.Asset(t, rel), "-t", strconv.FormatFloat(upto.Seconds()+2, 'f', 3, 64))
	if len(sums) < len(pts) {
		t.Fatalf("FFmpeg decoded %d frames of the source, %d units read", len(sums), len(pts))
	}
	byPTS := map[time.Duration]string{}
	for k, p := range pts {
		byPTS[p] = sums[k]
	}
	return byPTS
}

// export writes the export of [from, to) to a file and returns its path.
func export(t *testing.T, r *record.Recorder, from, to time.Time) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "export.mp4")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := r.Export(f, "cam1", from, to); err != nil {
		t.Fatalf("export of [%v, %v): %v", from.Sub(t0), to.Sub(t0), err)
	}
	return p
}

// checkExact checks that path presents exactly the source frames of [from, to): FFmpeg's
// format duration is the range's within a frame, and the frames it presents are the source's
// frames of the range, pixel for pixel (MD5), the first being the frame at from.
func checkExact(t *testing.T, path string, units []media.AccessUnit, byPTS map[time.Duration]string, from, to time.Time, frame, gap time.Duration) {
	t.Helper()
	var want []string
	var in []media.AccessUnit
	for i := range units {
		if w := units[i].Wallclock; !w.Before(from) && w.Before(to) {
			in = append(in, units[i])
		}
	}
	slices.SortFunc(in, func(a, b media.AccessUnit) int { return a.Wallclock.Compare(b.Wallclock) })
	for _, u := range in {
		want = append(want, byPTS[u.PTS])
	}
	got := frameMD5s(t, path)
	if len(got) == 0 || len(want) == 0 || got[0] != want[0] {
		t.Errorf("the first frame presented is not the source's frame at %v", from.Sub(t0))
	}
	if !slices.Equal(got, want) {
		t.Errorf("FFmpeg presents %d frames, the range [%v, %v) holds %d; the same pixels: %v",
			len(got), from.Sub(t0), to.Sub(t0), len(want), slices.Equal(got, want))
	}
	if d, want := formatDuration(t, path), (to.Sub(from) - gap).Seconds(); math.Abs(d-want) > frame.Seconds()+1e-3 {
		t.Errorf("format duration %.3f s, want the range's %.3f s (less a gap of %v) within a frame", d, want, gap)
	}
}

// frameTime is the wall time of the first frame of units presented at or after PTS d.
func frameTime(t *testing.T, units []media.AccessUnit, d time.Duration) (time.Time, bool) {
	t.Helper()
	best := -1
	for i := range units {
		if units[i].PTS >= d && (best < 0 || units[i].PTS < units[best].PTS) {
			best = i
		}
	}
	if best < 0 {
		t.Fatalf("no frame at or after %v", d)
	}
	return units[best].Wallclock, units[best].Key
}

// An export of a range starting and ending mid-GOP, across segments, presents exactly the
// range in FFmpeg (its edit list honoured): the source's frames from the one at start to the
// last before end, pixel for pixel, B-frames included, H.264 and H.265. The file still carries
// the GOP's earlier frames (decoded, not shown); its zero box is the start frame's PTS.
func TestExportCutsAtFrames(t *testing.T) {
	for _, tc := range []struct {
		name, asset    string
		upto, from, to time.Duration
		frame          time.Duration
	}{
		{"H.264", sample, 12 * time.Second, 4400 * time.Millisecond, 8700 * time.Millisecond, 100 * time.Millisecond},                              // 10 fps, a key frame a second, B-frames
		{"H.265", "videos/person-bicycle-car_hevc.mp4", 11 * time.Second, 2500 * time.Millisecond, 7250 * time.Millisecond, 84 * time.Millisecond}, // 12 fps, a key frame each 10 s, B-frames
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, units, byPTS := recordClip(t, tc.asset, tc.upto)
			from, k1 := frameTime(t, units, tc.from)
			to, k2 := frameTime(t, units, tc.to)
			if k1 || k2 {
				t.Fatal("the range starts or ends on a key frame")
			}
			p := export(t, r, from, to)
			decodes(t, p)
			b, _ := os.ReadFile(p)
			if !bytes.Contains(b, []byte("elst")) {
				t.Error("the export has no edit list")
			}
			checkExact(t, p, units, byPTS, from, to, tc.frame, 0)
			all := frameMD5s(t, p, "-ignore_editlist", "1")
			if shown := len(frameMD5s(t, p)); len(all) <= shown {
				t.Errorf("without its edit list the export holds %d frames, with it %d: the lead of the first GOP is missing", len(all), shown)
			}
			// the export's zero box: a frame presented at t is the source's frame of PTS zero+t
			i := bytes.Index(b, []byte("freevinfzero"))
			if i < 4 {
				t.Fatal("the export has no zero box")
			}
			zero := time.Duration(binary.BigEndian.Uint64(b[i+12:]))
			if want := from.Sub(t0); (zero - want).Abs() > time.Microsecond {
				t.Errorf("the export's zero is PTS %v, want the frame at start's, %v", zero, want)
			}
		})
	}
}

// Ranges starting and ending anywhere (on a key frame, a P- or B-frame, between two frames),
// within a segment or across them: each export presents exactly the range's frames. The H.265
// clip has open GOPs: a CRA key frame every 10 s whose leading frames (decoded after it,
// presented before it, referring to the GOP before) start the next segment. EXPORT_SEED
// picks other ranges.
func TestExportRandomRanges(t *testing.T) {
	seed := uint64(26)
	if v, err := strconv.ParseUint(os.Getenv("EXPORT_SEED"), 10, 64); err == nil {
		seed = v
	}
	for _, tc := range []struct {
		name, asset string
		frame       time.Duration
	}{{"H.264", sample, 100 * time.Millisecond}, {"H.265", "videos/person-bicycle-car_hevc.mp4", 84 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			r, units, byPTS := recordClip(t, tc.asset, 12*time.Second)
			rng := rand.New(rand.NewPCG(seed, 1))
			n := 0
			for range 5 {
				a, b := units[rng.IntN(len(units))].Wallclock, units[rng.IntN(len(units))].Wallclock
				if a.After(b) {
					a, b = b, a
				}
				from := a.Add(time.Duration(rng.IntN(3)) * 40 * time.Millisecond) // on the frame, or 40 or 80 ms after
				to := b.Add(time.Duration(rng.IntN(3)) * 40 * time.Millisecond)
				if to.Sub(from) < 200*time.Millisecond {
					continue
				}
				p := export(t, r, from, to)
				checkExact(t, p, units, byPTS, from, to, tc.frame, 0)
				n++
			}
			t.Logf("%d ranges (seed %d)", n, seed)
		})
	}
}

// Open GOPs (the H.265 clip: a CRA key frame every 10 s, its leading frames presented before
// it and referring to the GOP before, in the next segment): a range starting at a leading
// frame takes the GOP before too, a range ending at the CRA takes its leading frames.
func TestExportOpenGOP(t *testing.T) {
	r, units, byPTS := recordClip(t, "videos/person-bicycle-car_hevc.mp4", 12*time.Second)
	for _, rg := range [][2]time.Duration{{9900 * time.Millisecond, 11500 * time.Millisecond}, {8150 * time.Millisecond, 10 * time.Second}} {
		from, _ := frameTime(t, units, rg[0])
		to, _ := frameTime(t, units, rg[1])
		p := export(t, r, from, to)
		decodes(t, p)
		checkExact(t, p, units, byPTS, from, to, 84*time.Millisecond, 0)
	}
}

// A range from a key frame to a key frame has no frame to skip: without B-frames there is no
// edit list at all; with them its one edit only takes off the key frame's composition delay
// (as FFmpeg's muxer writes) and every frame in the file is shown.
func TestExportFromKeyFrame(t *testing.T) {
	t.Run("no B-frames", func(t *testing.T) {
		r, units, byPTS := recordClip(t, "videos/car-detection.mp4", 10*time.Second) // 12.5 fps, a key frame each 4.8 s
		from, to := t0.Add(4800*time.Millisecond), t0.Add(9600*time.Millisecond)
		p := export(t, r, from, to)
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte("edts")) {
			t.Error("an export from a key frame to the next has an edit list")
		}
		checkExact(t, p, units, byPTS, from, to, 80*time.Millisecond, 0)
	})
	t.Run("B-frames", func(t *testing.T) {
		r, units, byPTS := recordClip(t, sample, 8*time.Second)
		from, to := t0.Add(5*time.Second), t0.Add(7*time.Second)
		p := export(t, r, from, to)
		checkExact(t, p, units, byPTS, from, to, 100*time.Millisecond, 0)
		if all, shown := frameMD5s(t, p, "-ignore_editlist", "1"), frameMD5s(t, p); !slices.Equal(all, shown) {
			t.Errorf("the file holds %d frames, %d shown: the edit skips some", len(all), len(shown))
		}
	})
}

// An export across a gap between segments (the source gone for 2 s, back with its PTS from
// 0) closes it up: it shows the range's frames of both, in order, from the one at start, and
// lasts the range less the gap.
func TestExportAcrossGap(t *testing.T) {
	units := readUnits(t, sample, 4*time.Second)
	const gap = 2 * time.Second
	back := units[len(units)-1].Wallclock.Add(100*time.Millisecond + gap)
	all := append([]media.AccessUnit(nil), units...)
	for _, u := range units {
		u.Wallclock = back.Add(u.Wallclock.Sub(t0))
		all = append(all, u)
	}
	r := newRecorder(t, t.TempDir(), nil)
	feed(t, r, r.Observer("cam1"), all)
	r.Close()
	from, to := t0.Add(2500*time.Millisecond), back.Add(1500*time.Millisecond)
	p := export(t, r, from, to)
	decodes(t, p)
	checkExact(t, p, all, sourceMD5s(t, sample, units, 4*time.Second), from, to, 100*time.Millisecond, gap)
}

// An export stops before a segment of another codec (or other parameter sets): what it holds
// plays, the frames of the range before the change.
func TestExportStopsAtNewParameterSets(t *testing.T) {
	h264 := readUnits(t, sample, 4*time.Second)
	h265 := readUnits(t, "videos/person-bicycle-car_hevc.mp4", 3*time.Second)
	after := h264[len(h264)-1].Wallclock.Add(time.Second)
	units := append([]media.AccessUnit(nil), h264...)
	for _, u := range h265 {
		u.Wallclock = after.Add(u.Wallclock.Sub(t0))
		units = append(units, u)
	}
	r := newRecorder(t, t.TempDir(), nil)
	feed(t, r, r.Observer("cam1"), units)
	r.Close()
	from := t0.Add(2500 * time.Millisecond)
	p := export(t, r, from, after.Add(2*time.Second))
	decodes(t, p)
	want := 0
	for _, u := range h264 {
		if !u.Wallclock.Before(from) {
			want++
		}
	}
	if n := len(frameMD5s(t, p)); n != want {
		t.Errorf("the export shows %d frames, want the H.264 ones from 2.5 s, %d", n, want)
	}
}

// sizeWriter is an export's writer that is told its size.
type sizeWriter struct {
	bytes.Buffer
	size    int64
	late    bool // told after a write
	toldNum int
}

func (s *sizeWriter) SetSize(n int64) { s.size, s.late, s.toldNum = n, s.Len() > 0, s.toldNum+1 }

// A writer that is a record.Sizer learns the export's size before the first write (the HTTP
// answer's Content-Length), and it is what is written.
func TestExportTellsItsSize(t *testing.T) {
	r, _, _ := recordClip(t, sample, 4*time.Second)
	var w sizeWriter
	if err := r.Export(&w, "cam1", t0.Add(1500*time.Millisecond), t0.Add(3500*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if w.toldNum != 1 || w.late || w.size != int64(w.Len()) {
		t.Errorf("told %d times the size %d (after a write: %v); %d bytes written", w.toldNum, w.size, w.late, w.Len())
	}
}

// Invalid ranges keep their clear errors.
func TestExportBadRanges(t *testing.T) {
	r, _, _ := recordClip(t, sample, 4*time.Second)
	var b bytes.Buffer
	for _, tc := range []struct {
		name     string
		stream   string
		from, to time.Time
		want     error
	}{
		{"empty", "cam1", t0.Add(time.Second), t0.Add(time.Second), record.ErrNothing},
		{"reversed", "cam1", t0.Add(3 * time.Second), t0.Add(time.Second), record.ErrNothing},
		{"between two frames", "cam1", t0.Add(1010 * time.Millisecond), t0.Add(1090 * time.Millisecond), record.ErrNothing},
		{"not recorded", "cam1", t0.Add(time.Hour), t0.Add(2 * time.Hour), record.ErrNothing},
		{"over an hour", "cam1", t0, t0.Add(61 * time.Minute), record.ErrTooLong},
		{"a path for a stream", "../cam1", t0, t0.Add(time.Second), record.ErrNoStream},
	} {
		b.Reset()
		if err := r.Export(&b, tc.stream, tc.from, tc.to); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		if b.Len() != 0 {
			t.Errorf("%s: %d bytes written with the error", tc.name, b.Len())
		}
	}
}

// BenchmarkExport exports 60 s of the bundled clip (10 fps, B-frames) recorded in 3 s
// segments, from mid-GOP to mid-GOP: bytes written a second (MB/s), allocations.
func BenchmarkExport(b *testing.B) {
	units := readUnits(b, sample, 62*time.Second)
	r := newRecorder(b, b.TempDir(), nil)
	feed(b, r, r.Observer("cam1"), units)
	r.Close()
	from, to := t0.Add(500*time.Millisecond), t0.Add(60500*time.Millisecond)
	var n countWriter
	if err := r.Export(&n, "cam1", from, to); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := r.Export(io.Discard, "cam1", from, to); err != nil {
			b.Fatal(err)
		}
	}
}

// countWriter counts the bytes written to it.
type countWriter int

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
