package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/api"
	"github.com/vinfer/vinfer/app"
	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/apptest"
	"github.com/vinfer/vinfer/internal/defs"
)

// oneClip is a defs.Evidence whose every event has the same clip file.
type oneClip struct{ path string }

func (oneClip) EvidenceList(defs.EvidenceQuery) ([]defs.EvidenceItem, string, error) {
	return nil, "", nil
}
func (oneClip) EvidenceItem(string) (defs.EvidenceItem, error) { return defs.EvidenceItem{}, nil }
func (c oneClip) EvidenceFile(string, defs.EvidenceFileKind) (*os.File, error) {
	return os.Open(c.path)
}

// TestEvidenceClipRanges: a multi-range request to a clip is limited (issue 25, item 8: 5,000
// one-byte ranges made the answer 14 times the clip's size): more than a few ranges, or
// overlapping ones, get 416; what is sent stays within the clip's size plus part headers, and a
// video element's single range and a few disjoint ranges still get 206.
func TestEvidenceClipRanges(t *testing.T) {
	const size = 10_000
	clip := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(clip, []byte(strings.Repeat("0123456789", size/10)), 0o600); err != nil {
		t.Fatal(err)
	}
	a := apptest.MustApp(t, &config.Config{}, app.Options{Log: slog.New(slog.DiscardHandler)})
	srv := &api.Server{App: a, Addr: "127.0.0.1:0", Evidence: oneClip{clip}, Log: slog.New(slog.DiscardHandler)}
	if err := srv.Start(); err != nil {
		a.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close(); a.Stop() })

	many := make([]string, 5000)
	for i := range many {
		many[i] = fmt.Sprintf("%d-%d", 2*i, 2*i)
	}
	for _, tc := range []struct {
		ranges string
		code   int
		max    int64 // body bytes at most
	}{
		{"bytes=" + strings.Join(many, ","), http.StatusRequestedRangeNotSatisfiable, 1024},
		{"bytes=0-0,2-2,4-4,6-6,8-8", http.StatusRequestedRangeNotSatisfiable, 1024},
		{"bytes=0-4999,0-4999", http.StatusRequestedRangeNotSatisfiable, 1024},
		{"bytes=0-4999,4000-", http.StatusRequestedRangeNotSatisfiable, 1024},
		{"bytes=0-99,-9950", http.StatusRequestedRangeNotSatisfiable, 1024},
		{"bytes=100-199", http.StatusPartialContent, 100},
		{"bytes=0-9,100-109,-10", http.StatusPartialContent, 30 + 3*256},
		{"bytes=0-", http.StatusPartialContent, size},
	} {
		req, err := http.NewRequest("GET", srv.URL()+"/api/evidence/01ARZ3NDEKTSV4RRFFQ69G5FAV/clip.mp4", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Range", tc.ranges)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		n, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 100*size))
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		name := tc.ranges[:min(len(tc.ranges), 40)]
		if resp.StatusCode != tc.code || n > tc.max {
			t.Errorf("Range %s: %d with %d bytes, want %d with at most %d", name, resp.StatusCode, n, tc.code, tc.max)
		}
		if tc.code == http.StatusRequestedRangeNotSatisfiable && resp.Header.Get("Content-Range") != fmt.Sprintf("bytes */%d", size) {
			t.Errorf("Range %s: Content-Range %q", name, resp.Header.Get("Content-Range"))
		}
	}
}
