package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
	"github.com/vinfer/vinfer/track/mot"
)

// liveMOT turns the live JSON Lines results of stream (frames with detections) into
// MOTChallenge rows, as an auditor would: frame+1, track id (-1 untracked), x, y, w, h, score.
func liveMOT(t *testing.T, path, stream string) (rows []mot.Row, frames int, ended bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, false
	}
	var out []byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r struct {
			Source     string
			End        bool
			Frame      int
			Detections []struct {
				Score   float64
				Box     [4]float64
				TrackID int64 `json:"track_id"`
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.Source != stream {
			continue
		}
		if r.End {
			ended = true
			continue
		}
		frames++
		for _, d := range r.Detections {
			id := d.TrackID
			if id == 0 {
				id = -1
			}
			out = mot.AppendResult(out, mot.Row{Frame: r.Frame + 1, ID: id, X: d.Box[0], Y: d.Box[1],
				W: d.Box[2] - d.Box[0], H: d.Box[3] - d.Box[1], Conf: d.Score})
		}
	}
	rows, err = mot.Read(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return rows, frames, ended
}

// A recorded stream's per-frame results come back from the API as JSON Lines and as
// MOTChallenge rows that score, with the repository's MOT scorer, exactly as the live results
// do; its video comes back as segments (range requests) and as one export holding every frame.
func TestRecordingAndResultsLog(t *testing.T) {
	clip := testutil.ShortClip(t, "videos/car-detection.mp4", 120) // two GOPs of 4.8 s
	dir := t.TempDir()
	live := filepath.Join(dir, "live.jsonl")
	e := startWith(t, "", func(c *config.Config) {
		c.Record = &config.Record{Dir: filepath.Join(dir, "rec"), Segment: config.Duration(4 * time.Second)}
		c.Output.JSONL = live
	}, nil)
	from := time.Now().Add(-time.Second)
	if err := e.app.AddStream(config.Stream{ID: "cam1", Source: clip, Model: "yolox", Realtime: true, Record: true}); err != nil {
		t.Fatal(err)
	}
	q := "start=" + url.QueryEscape(from.UTC().Format(time.RFC3339Nano)) + "&end=" +
		url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339Nano))
	var liveRows, gotRows []mot.Row
	var inferred int64
	testutil.Eventually(t, 2*time.Minute, "the stream ends and its results are logged", func() bool {
		st, _ := e.app.Stream("cam1")
		liveRows, _, _ = liveMOT(t, live, "cam1")
		if !st.Ended {
			return false
		}
		inferred = st.Counters.Inferred
		_, b := e.do("GET", "/api/streams/cam1/results?"+q, "")
		if int64(bytes.Count(b, []byte("\n"))) != inferred { // every inferred frame, with objects or none
			return false
		}
		_, b = e.do("GET", "/api/streams/cam1/results?format=mot&"+q, "")
		var err error
		if gotRows, err = mot.Read(bytes.NewReader(b)); err != nil {
			t.Fatalf("the MOT export is not MOTChallenge rows: %v\n%s", err, b)
		}
		return len(gotRows) == len(liveRows)
	})
	if len(liveRows) == 0 {
		t.Fatal("no detections in the live results")
	}
	// The reference: the live run's boxes of even frames, so that the scores are not perfect
	// whatever the scores of a run on a loaded machine (odd frames' boxes are false positives).
	var gt []mot.Row
	for _, r := range liveRows {
		if r.Frame%2 == 0 && r.ID > 0 {
			gt = append(gt, r)
		}
	}
	if !slices.Equal(liveRows, gotRows) {
		t.Errorf("the MOT export's rows differ from the live results'")
	}
	tracked := func(rows []mot.Row) []mot.Row { // the scorer takes one box per identity and frame
		return slices.DeleteFunc(slices.Clone(rows), func(r mot.Row) bool { return r.ID <= 0 })
	}
	mLive, err := mot.Evaluate(gt, tracked(liveRows))
	if err != nil {
		t.Fatal(err)
	}
	mExport, err := mot.Evaluate(gt, tracked(gotRows))
	if err != nil {
		t.Fatal(err)
	}
	if mLive != mExport {
		t.Errorf("scores differ:\n live   %v\n export %v", mLive, mExport)
	}
	if mLive.FP == 0 || mLive.MOTA >= 1 {
		t.Errorf("the reference matches everything (%v): the comparison says little", mLive)
	}
	t.Logf("live and export: %v", mLive)

	// JSON Lines: one line per inferred frame.
	resp, b := e.do("GET", "/api/streams/cam1/results?"+q, "")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/jsonl" {
		t.Fatalf("results: %s %s", resp.Status, b)
	}
	if n := bytes.Count(b, []byte("\n")); int64(n) != inferred {
		t.Errorf("%d JSON lines, %d frames inferred", n, inferred)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	var f0 struct {
		Frame   int
		Objects []struct{ Box [4]float64 }
	}
	if err := json.Unmarshal(first, &f0); err != nil {
		t.Fatalf("a results line is not JSON: %v: %s", err, first)
	}

	// The video: segments in one span, every frame in the export.
	var list struct {
		Spans    []struct{ Start, End time.Time }
		Segments []struct {
			Name  string
			URL   string
			Bytes int64
		}
	}
	testutil.Eventually(t, time.Minute, "the last segment closes", func() bool {
		e.want("GET", "/api/streams/cam1/recordings?"+q, "", http.StatusOK, &list)
		st, _ := e.app.Stream("cam1")
		return st.Ended && len(list.Segments) >= 2
	})
	if len(list.Spans) != 1 {
		t.Errorf("spans %+v, want one", list.Spans)
	}
	req, _ := http.NewRequest("GET", e.url+list.Segments[0].URL, nil)
	req.Header.Set("Range", "bytes=0-99")
	rr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	rr.Body.Close()
	if rr.StatusCode != http.StatusPartialContent || rr.ContentLength != 100 {
		t.Errorf("a range of a segment: %s, %d bytes", rr.Status, rr.ContentLength)
	}
	q2 := "start=" + url.QueryEscape(from.UTC().Format(time.RFC3339Nano)) + "&end=" +
		url.QueryEscape(time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano))
	resp, b = e.do("GET", "/api/streams/cam1/export.mp4?"+q2, "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("export: %s %s", resp.Status, b)
	}
	if resp.ContentLength != int64(len(b)) {
		t.Errorf("the export's Content-Length is %d, %d bytes came", resp.ContentLength, len(b))
	}
	exp := filepath.Join(dir, "export.mp4")
	os.WriteFile(exp, b, 0o644)
	out, err := exec.Command("ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", exp).Output()
	if n, _ := strconv.Atoi(strings.TrimSpace(string(out))); err != nil || n != 120 {
		t.Errorf("the export holds %q frames (%v), want the clip's 120", out, err)
	}

	_, b = e.do("GET", "/metrics", "")
	for _, m := range []string{"vinfer_recording_segments_total ", "vinfer_results_log_frames_total " + strconv.FormatInt(inferred, 10)} {
		if !bytes.Contains(b, []byte(m)) {
			t.Errorf("/metrics has no %q", m)
		}
	}

	// Bad input: clear errors, nothing outside the recordings reached.
	for path, code := range map[string]int{
		"/api/streams/cam1/results?format=xml":                       http.StatusBadRequest,
		"/api/streams/cam1/results?start=x":                          http.StatusBadRequest,
		"/api/streams/cam1/results?start=100&end=99":                 http.StatusBadRequest,
		"/api/streams/cam1/results?start=0&end=999999":               http.StatusBadRequest,
		"/api/streams/cam1/recordings/..%2F..%2Fresults":             http.StatusNotFound,
		"/api/streams/cam1/recordings/000000000000001-x.mp4":         http.StatusNotFound,
		"/api/streams/cam1/export.mp4?start=0&end=7200":              http.StatusBadRequest,
		"/api/streams/cam1/export.mp4?start=0&end=60":                http.StatusNotFound,
		"/api/streams/..%2Fcam1/recordings/" + list.Segments[0].Name: http.StatusNotFound,
		"/api/streams/nope/recordings":                               http.StatusNotFound,
		"/api/streams/nope/results":                                  http.StatusNotFound,
		"/api/streams/nope/export.mp4":                               http.StatusNotFound,
		"/api/streams/cam1/recordings/000000000000001.part":          http.StatusNotFound,
		"/api/streams/cam1/recordings/..%2F000000000000001.part":     http.StatusNotFound,
		"/api/streams/cam1/recordings?start=yesterday":               http.StatusBadRequest,
		"/api/streams/cam1/export.mp4?start=100&end=99":              http.StatusBadRequest,
	} {
		if resp, b := e.do("GET", path, ""); resp.StatusCode != code {
			t.Errorf("GET %s: %s, want %d: %s", path, resp.Status, code, b)
		}
	}
}

// Without a record section the routes say what to configure.
func TestRecordingOff(t *testing.T) {
	e := start(t, "")
	for _, p := range []string{"/api/streams/cam1/results", "/api/streams/cam1/recordings", "/api/streams/cam1/export.mp4"} {
		resp, b := e.do("GET", p, "")
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), "record section") {
			t.Errorf("GET %s: %s %s", p, resp.Status, b)
		}
	}
}
