package evidence

import (
	"context"
	"encoding/json"
	"io"
	"os/exec"
	"path/filepath"
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
	return readUnitsOf(t, testutil.Asset(t, sample), upto)
}

// readUnitsOf returns copies of the access units of the file at path up to PTS upto.
func readUnitsOf(t testing.TB, path string, upto time.Duration) []media.AccessUnit {
	t.Helper()
	src := &file.Source{Path: path}
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

// motorway re-encodes the motorway clip (30 s, 12.5 fps) at 2.5 Mbit/s, a key frame every
// 4.8 s (60 frames) and two B-frames, as a camera's main stream is: about 1.5 MB per GOP, so a
// buffer that kept its first MiB could not hold one.
func motorway(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "motorway.mp4")
	out, err := exec.Command("ffmpeg", "-v", "error", "-nostdin", "-i", testutil.Asset(t, "videos/car-detection.mp4"),
		"-an", "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "2500k", "-minrate", "2500k", "-maxrate", "2500k",
		"-bufsize", "500k", "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-bf", "2", dst).CombinedOutput()
	if err != nil {
		t.Fatalf("encoding the motorway clip: %v\n%s", err, out)
	}
	return dst
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

// feed runs units through stream's ring and its results through r the way the pipeline does:
// after each unit, a result for the frames up to its PTS less lag (the decoder and inference run
// behind the source), each event with the result at its PTS; at the end the results of the rest.
func feed(r *Recorder, stream string, units []media.AccessUnit, evs []event.Event, lag time.Duration) {
	ring := r.Ring(stream)
	next := 0
	done := time.Duration(-1)
	for i := range units {
		ring.ObserveAccessUnit(&units[i])
		for next < len(evs) && units[i].PTS >= evs[next].PTS+lag {
			r.Write(&sink.Result{Stream: stream, PTS: evs[next].PTS, Events: evs[next : next+1]})
			done = max(done, evs[next].PTS)
			next++
		}
		if pts := units[i].PTS - lag; pts > done {
			r.Write(&sink.Result{Stream: stream, PTS: pts})
			done = pts
		}
	}
	for ; next < len(evs); next++ { // the pipeline drains
		r.Write(&sink.Result{Stream: stream, PTS: evs[next].PTS, Events: evs[next : next+1]})
	}
	if len(units) > 0 {
		r.Write(&sink.Result{Stream: stream, PTS: units[len(units)-1].PTS})
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

// synced waits until r's writer ran every job queued so far: the clips completed by then are
// written or failed.
func synced(t testing.TB, r *Recorder) {
	t.Helper()
	ch := make(chan struct{})
	r.enqueue(job{synced: ch}, "queue_full")
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatal("the evidence writer did not catch up within a minute")
	}
}
