package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/analytics"
	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/evidence"
	"github.com/vinfer/vinfer/internal/defs"
	"github.com/vinfer/vinfer/internal/testutil"
)

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if v != nil {
		json.NewDecoder(resp.Body).Decode(v)
	}
	return resp.StatusCode
}

// TestEvidenceFromPipeline runs the README's sample with its table zone and exit line through
// the whole app, recording line crossings: every line.cross gets a clip and snapshots, the
// first (≈19.1 s) from the key frame at or before 9.1 s, served with range requests and
// readable by ffprobe with the expected length; the snapshot is the track's best frame in the
// clip; every sink (the events file, MQTT, a webhook, SSE) carries the same event JSON with
// has_clip, has_snapshot and URLs (after evidence.public_url) that fetch the clip and the
// snapshot, and has_clip false on the zone events left out; the evidence series are on
// /metrics, and no frame was lost to recording.
func TestEvidenceFromPipeline(t *testing.T) {
	dir := t.TempDir()
	addr := testutil.FreeAddr(t)
	sinks := startSinkPeers(t)
	cfg := &config.Config{Dir: dir,
		Models: []config.Model{{Name: "m", Path: testutil.Asset(t, "models/yolox_nano_416.onnx")}},
		Evidence: &config.Evidence{Dir: filepath.Join(dir, "evidence"), Pre: config.Duration(10 * time.Second), Post: config.Duration(5 * time.Second),
			Events: []string{"line.cross"}, MaxBytes: 64 << 20, PublicURL: "http://" + addr},
		Output: config.Output{Events: filepath.Join(dir, "events.jsonl"), Sinks: sinks.decls()},
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := &api.Server{App: a, Addr: addr, Evidence: a.Evidence()}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	sse := readSSE(t, srv.URL()+"/api/events?type=all")
	s := config.Stream{ID: "office", Source: testutil.Asset(t, "videos/one-by-one-person-detection.mp4"), Model: "m", Interval: 2,
		Config: analytics.Config{
			Zones: []analytics.Zone{{Name: "table", Polygon: []analytics.Point{{380, 350}, {570, 350}, {570, 432}, {380, 432}}, Classes: []string{"person"}}},
			Lines: []analytics.Line{{Name: "exit", Points: []analytics.Point{{620, 300}, {620, 432}}, Classes: []string{"person"}}}}}
	if err := a.AddStream(s); err != nil {
		t.Fatal(err)
	}
	a.Pipeline.Wait()

	var page struct {
		Items []defs.EvidenceItem
		Next  string
	}
	testutil.Eventually(t, 60*time.Second, "every line.cross has its clip", func() bool {
		page.Items = nil
		getJSON(t, srv.URL()+"/api/evidence?stream=office&type=line.cross", &page)
		if len(page.Items) == 0 {
			return false
		}
		for _, it := range page.Items {
			if !it.HasClip || !it.HasSnapshot {
				return false
			}
		}
		return true
	})
	first := page.Items[len(page.Items)-1] // newest first
	if first.PTS < 18 || first.PTS > 20.5 || first.Clip.Start > first.PTS-10 || first.Clip.Start < first.PTS-11 || first.Clip.Truncated {
		t.Fatalf("first crossing at %.1f s, clip %+v: want ≈19.1 s, a clip from the key frame at or before event−10 s", first.PTS, first.Clip)
	}

	// Range request, as a browser seeking.
	req, _ := http.NewRequest("GET", srv.URL()+first.ClipURL, nil)
	req.Header.Set("Range", "bytes=100-199")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent || len(body) != 100 || !strings.HasPrefix(resp.Header.Get("Content-Range"), "bytes 100-199/") {
		t.Fatalf("range request: %d, %d bytes, Content-Range %q", resp.StatusCode, len(body), resp.Header.Get("Content-Range"))
	}
	resp, err = http.Get(srv.URL() + first.ClipURL)
	if err != nil {
		t.Fatal(err)
	}
	clip := filepath.Join(t.TempDir(), "clip.mp4")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	os.WriteFile(clip, b, 0o644)
	out, err := exec.Command("ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", clip).Output()
	if err != nil {
		t.Fatalf("ffprobe: %v", err)
	}
	dur, _ := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if want := first.Clip.End - first.Clip.Start; dur < 14.9 || dur > 16.1 || dur < want-0.2 || dur > want+0.2 {
		t.Fatalf("clip lasts %.2f s (index: %.2f s), want 15 s to 16 s (pre+post, up to one GOP more)", dur, want)
	}
	if code := getJSON(t, srv.URL()+"/api/evidence/"+first.ID+"/snapshot.jpg?boxes=1", nil); code != 200 {
		t.Fatalf("snapshot: %d", code)
	}
	if code := getJSON(t, srv.URL()+first.FrameURL+"?boxes=1", nil); code != 200 || first.FrameURL == "" {
		t.Fatalf("event's frame %q: %d", first.FrameURL, code)
	}
	for _, it := range page.Items {
		checkBest(t, it)
	}
	// The issue's paths: /api/events?…&limit= is the recorded list (the live stream otherwise),
	// /api/events/{id}/… the files.
	var issuePage struct {
		Items []defs.EvidenceItem
		Next  string
	}
	if code := getJSON(t, srv.URL()+"/api/events?stream=office&type=line.cross&since=0&limit=2", &issuePage); code != 200 ||
		len(issuePage.Items) != 2 || issuePage.Items[0].ID != page.Items[0].ID || issuePage.Next != page.Items[1].ID {
		t.Fatalf("GET /api/events?…&limit=2: %d, %d items, next %q", code, len(issuePage.Items), issuePage.Next)
	}
	for _, f := range []string{"", "/clip.mp4", "/snapshot.jpg", "/frame.jpg"} {
		if code := getJSON(t, srv.URL()+"/api/events/"+first.ID+f, nil); code != 200 {
			t.Fatalf("GET /api/events/{id}%s: %d", f, code)
		}
	}
	checkSinks(t, filepath.Join(dir, "events.jsonl"), sinks, sse, len(page.Items))
	var e struct{ Error string }
	if code := getJSON(t, srv.URL()+"/api/evidence/..%2f..%2fetc%2fpasswd/clip.mp4", &e); code != 400 && code != 404 {
		t.Fatalf("path in the id: %d %s", code, e.Error)
	}
	if code := getJSON(t, srv.URL()+"/api/evidence/01ARZ3NDEKTSV4RRFFQ69G5FAV/clip.mp4", &e); code != 404 {
		t.Fatalf("unknown id: %d", code)
	}

	wants := []string{`vinfer_evidence_buffer_bytes{stream="office"}`, "vinfer_evidence_clips_written_total " + strconv.Itoa(countClips(page.Items))}
	testutil.Eventually(t, 10*time.Second, "/metrics has "+strings.Join(wants, ", "), func() bool { // counted after the index commit
		mresp, err := http.Get(srv.URL() + "/metrics")
		if err != nil {
			return false
		}
		mb, _ := io.ReadAll(mresp.Body)
		mresp.Body.Close()
		for _, w := range wants {
			if !strings.Contains(string(mb), w) {
				return false
			}
		}
		return true
	})
	st, _ := a.Stream("office")
	if d := st.Counters.DroppedTotal() - st.Counters.Dropped[defs.DropInterval]; d != 0 || st.Counters.Inferred != 697 {
		t.Errorf("inferred %d, dropped %v: recording must not cost frames", st.Counters.Inferred, st.Counters.Dropped)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
}

func countClips(items []defs.EvidenceItem) int {
	seen := map[string]bool{}
	for _, it := range items {
		seen[it.Clip.ID] = true
	}
	return len(seen)
}

// TestEvidenceUnwritableDir: a folder that cannot be created is an error when the app starts.
func TestEvidenceUnwritableDir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	cfg := &config.Config{Evidence: &config.Evidence{Dir: filepath.Join(f, "ev")}}
	_, err := app.New(context.Background(), cfg, app.Options{})
	if !errors.Is(err, evidence.ErrUnwritable) {
		t.Fatalf("app.New: %v, want ErrUnwritable", err)
	}
	t.Log(err)
}

// TestEvidenceDiskFull records every line crossing of the sample onto a real 2 MiB file system
// (tmpfs, root only) with the default free-space guard (5% of it): clips that do not fit are
// counted and logged, older ones deleted for room, nothing is left half-written, and inference
// loses no frame.
func TestEvidenceDiskFull(t *testing.T) {
	dir := testutil.SmallFS(t, 2<<20)
	cfg := &config.Config{
		Models:   []config.Model{{Name: "m", Path: testutil.Asset(t, "models/yolox_nano_416.onnx")}},
		Evidence: &config.Evidence{Dir: dir, Events: []string{"line.cross"}},
	}
	a, err := app.New(context.Background(), cfg, app.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := config.Stream{ID: "office", Source: testutil.Asset(t, "videos/one-by-one-person-detection.mp4"), Model: "m", Interval: 2,
		Config: analytics.Config{Lines: []analytics.Line{{Name: "exit", Points: []analytics.Point{{620, 300}, {620, 432}}, Classes: []string{"person"}}}}}
	if err := a.AddStream(s); err != nil {
		t.Fatal(err)
	}
	a.Pipeline.Wait()
	st, _ := a.Stream("office")

	// A clip deleted for room: its URL answers 404 with the reason.
	srv := &api.Server{App: a, Addr: "127.0.0.1:0", Evidence: a.Evidence()}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var gone defs.EvidenceItem
	testutil.Eventually(t, 60*time.Second, "a clip deleted for min_free", func() bool {
		items, _, err := a.Evidence().EvidenceList(defs.EvidenceQuery{Stream: "office"})
		for _, it := range items {
			if err == nil && it.Clip != nil && it.Clip.State == "gone" {
				gone = it
				return true
			}
		}
		return false
	})
	var e struct{ Error string }
	if code := getJSON(t, srv.URL()+"/api/evidence/"+gone.ID+"/clip.mp4", &e); code != 404 || !strings.Contains(e.Error, "min_free") {
		t.Errorf("clip deleted for room: %d %q, want 404 with the reason", code, e.Error)
	}
	t.Logf("expired clip: 404 %q", e.Error)
	if err := a.Stop(); err != nil { // writes the last clip, closes the index
		t.Fatal(err)
	}
	es := a.Evidence().(*evidence.Recorder).Stats()
	t.Logf("failures %v, deleted %v, clips written %d", es.Failures, es.Deleted, es.Clips)
	if es.Failures[evidence.FailDiskFull]+es.Failures[evidence.FailTooLarge]+es.Deleted[evidence.ReasonMinFree] == 0 {
		t.Errorf("no clip was refused or deleted for room on a 2 MiB file system")
	}
	if d := st.Counters.DroppedTotal() - st.Counters.Dropped[defs.DropInterval]; d != 0 || st.Counters.Inferred != 697 {
		t.Errorf("inferred %d, dropped %v: a full disk must not cost frames", st.Counters.Inferred, st.Counters.Dropped)
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".tmp") {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})
}
