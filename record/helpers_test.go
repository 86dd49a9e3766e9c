package record_test

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/record"
	"github.com/vinfer/vinfer/source/file"
)

// sample is the bundled clip of the README: 10 fps, a key frame every second, B-frames, 139 s.
const sample = "videos/one-by-one-person-detection.mp4"

var t0 = time.Date(2026, 12, 6, 2, 0, 0, 0, time.UTC)

// readUnits returns copies of the access units of the asset rel up to PTS upto, stamped with
// wall times t0 + PTS (a camera's sender reports), as the source hands them.
func readUnits(t testing.TB, rel string, upto time.Duration) []media.AccessUnit {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	src := &file.Source{Path: testutil.Asset(t, rel)}
	if err := src.Init(); err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out []media.AccessUnit
	for {
		au, err := src.Read(context.Background())
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if au.PTS > upto {
			return out
		}
		c := *au
		c.Data = append([]byte(nil), au.Data...)
		c.Wallclock = t0.Add(au.PTS)
		out = append(out, c)
	}
}

func newRecorder(t testing.TB, dir string, set func(*record.Recorder)) *record.Recorder {
	t.Helper()
	r := &record.Recorder{Dir: dir, Segment: 3 * time.Second}
	if set != nil {
		set(r)
	}
	if err := r.Init(); err != nil {
		t.Fatal(err)
	}
	return r
}

// probe returns a file's frame count as ffprobe reads it.
func probe(t testing.TB, path string) int {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
		"stream=nb_read_frames", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var v struct {
		Streams []struct {
			NbReadFrames string `json:"nb_read_frames"`
		}
	}
	if err := json.Unmarshal(out, &v); err != nil || len(v.Streams) != 1 {
		t.Fatalf("ffprobe output %s: %v", out, err)
	}
	n, _ := strconv.Atoi(v.Streams[0].NbReadFrames)
	return n
}

// decodes fails unless FFmpeg decodes every frame of path without an error.
func decodes(t testing.TB, path string) {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-xerror", "-i", path, "-f", "null", "-").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("ffmpeg decoding %s: %v\n%s", path, err, out)
	}
}

// feed hands units to o as the stream's goroutine does, letting the writer keep up (a GOP
// written before the next is handed over, as a real-time source paces them), then ends the
// stream.
func feed(t testing.TB, r *record.Recorder, o interface {
	ObserveAccessUnit(*media.AccessUnit)
	EndOfStream()
}, units []media.AccessUnit) {
	t.Helper()
	base := r.Stats()
	sent := int64(0)
	for i := range units {
		o.ObserveAccessUnit(&units[i])
		if units[i].Key && i > 0 {
			sent++
			testutil.Eventually(t, time.Minute, "the writer takes the GOP", func() bool {
				st := r.Stats()
				return st.Fragments+st.Dropped-base.Fragments-base.Dropped >= sent
			})
		}
	}
	o.EndOfStream()
}
