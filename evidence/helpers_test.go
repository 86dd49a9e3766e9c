package evidence

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/codec"
	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/media"
	"github.com/vinfer/vinfer/sink"
	"github.com/vinfer/vinfer/source/file"
)

// sample is the bundled clip of the README: 10 fps, a key frame every second, B-frames.
const sample = "videos/one-by-one-person-detection.mp4"

// readUnits returns copies of the sample's access units up to PTS upto.
func readUnits(t testing.TB, upto time.Duration) []media.AccessUnit {
	t.Helper()
	src := &file.Source{Path: testutil.Asset(t, sample)}
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
		out = append(out, c)
	}
}

// newRecorder returns an initialised recorder on a temporary folder, closed by the test.
func newRecorder(t testing.TB, dir string, set func(*Recorder)) *Recorder {
	t.Helper()
	r := &Recorder{Dir: dir, Pre: 10 * time.Second, Post: 5 * time.Second,
		NewDecoder: func(c media.Codec) (Decoder, error) {
			d := &codec.Decoder{Codec: c, Frames: 4}
			return d, d.Init()
		}}
	if set != nil {
		set(r)
	}
	if err := r.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

var gen = event.NewGenerator([32]byte{7})

// ev is a line.cross event of stream at pts.
func ev(stream string, pts time.Duration) event.Event {
	wall := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC).Add(pts)
	return event.Event{ID: gen.New(wall), Type: event.LineCross, Stream: stream, PTS: pts, Time: wall, TrackID: 1,
		Label: "person", Score: 0.9, Box: [4]float32{400, 100, 560, 400}, Line: "exit", Direction: event.Out}
}

// feed runs units through ring, delivering each event to r once a unit past its PTS plus lag
// went by (the pipeline's decoder runs ahead of its results).
func feed(r *Recorder, ring *Ring, units []media.AccessUnit, evs []event.Event, lag time.Duration) {
	next := 0
	for i := range units {
		ring.ObserveAccessUnit(&units[i])
		for next < len(evs) && units[i].PTS >= evs[next].PTS+lag {
			r.Write(&sink.Result{Stream: evs[next].Stream, Events: evs[next : next+1]})
			next++
		}
	}
	for ; next < len(evs); next++ {
		r.Write(&sink.Result{Stream: evs[next].Stream, Events: evs[next : next+1]})
	}
}

// probe returns a file's duration and frame count as ffprobe reads them.
func probe(t testing.TB, path string) (time.Duration, int) {
	t.Helper()
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries",
		"format=duration:stream=nb_read_frames,codec_name", "-of", "json", path).Output()
	if err != nil {
		t.Fatalf("ffprobe %s: %v", path, err)
	}
	var v struct {
		Format  struct{ Duration string }
		Streams []struct {
			NbReadFrames string `json:"nb_read_frames"`
		}
	}
	if err := json.Unmarshal(out, &v); err != nil || len(v.Streams) != 1 {
		t.Fatalf("ffprobe output %s: %v", out, err)
	}
	d, _ := strconv.ParseFloat(v.Format.Duration, 64)
	n, _ := strconv.Atoi(v.Streams[0].NbReadFrames)
	return time.Duration(d * float64(time.Second)), n
}

// decodes fails unless FFmpeg decodes every frame of path without an error.
func decodes(t testing.TB, path string) {
	t.Helper()
	out, err := exec.Command("ffmpeg", "-v", "error", "-xerror", "-i", path, "-f", "null", "-").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("ffmpeg decoding %s: %v\n%s", path, err, out)
	}
}
