package api_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
)

// TestExportCorruptInit: a recorded segment whose init section lost its movie box (a disk
// error, an edit by hand: its moov renamed) is answered 500 with the reason, not a panic that
// drops the connection; the next export of an intact range is still answered.
func TestExportCorruptInit(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	rec := filepath.Join(dir, "rec")
	recordLoops(t, rec, "cam1", "videos/one-by-one-person-detection.mp4", 1, t0)
	segs, err := filepath.Glob(filepath.Join(rec, "cam1", "*.mp4"))
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments %v: %v", segs, err)
	}
	intact, err := os.ReadFile(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	e := startWith(t, "", func(c *config.Config) {
		c.Record = &config.Record{Dir: rec, Segment: config.Duration(10 * time.Minute)}
	}, nil)
	path := fmt.Sprintf("/api/streams/cam1/export.mp4?start=%d&end=%d", t0.Unix(), t0.Add(5*time.Second).Unix())
	export := func() (int, string) {
		t.Helper()
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatalf("export: %v (the server dropped the connection)", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b[:min(len(b), 300)])
	}

	i := bytes.Index(intact, []byte("moov"))
	if i < 4 {
		t.Fatal("no moov in the segment")
	}
	bad := bytes.Clone(intact)
	copy(bad[i:], "free")
	if err := os.WriteFile(segs[0], bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := export(); code != http.StatusInternalServerError || !strings.Contains(body, "init section") {
		t.Fatalf("an export of a segment without its moov: %d %s, want 500 naming the init section", code, body)
	}
	if err := os.WriteFile(segs[0], intact, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, body := export(); code != http.StatusOK {
		t.Fatalf("an export of the intact segment after: %d %s, want 200", code, body)
	}
}
