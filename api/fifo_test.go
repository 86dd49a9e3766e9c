package api_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
)

// TestFIFOSwapped: a file swapped for a FIFO between the path check and FFmpeg's open left
// the thread in open(2) for ever; eight of them held every opening slot and every later add
// answered 503 until restart (issue 25, item 5). A FIFO named directly, and a file swapped for
// one and back again while adds run, are answered at once (a clear 422, or 201 when the file was
// there); later adds still open.
func TestFIFOSwapped(t *testing.T) {
	dir := t.TempDir()
	clip := filepath.Join(dir, "clip.mp4")
	b, err := os.ReadFile(asset(t, "videos/person-bicycle-car_hevc.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(clip, b, 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "pipe.mp4")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	e := startWith(t, "", func(c *config.Config) {
		c.Sources.AllowPaths, c.Sources.MaxOpening = []string{dir}, 2
	}, nil)
	client := &http.Client{Timeout: 30 * time.Second} // an add parked in open(2) never answers
	add := func(id, path string) (int, string) {
		t.Helper()
		resp, err := client.Post(e.url+"/api/streams", "application/json",
			strings.NewReader(fmt.Sprintf(`{"id":%q,"source":%q}`, id, path)))
		if err != nil {
			t.Fatalf("add %s: %v", id, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, b := add("fifo", fifo); code != http.StatusUnprocessableEntity || !strings.Contains(b, "not a regular file") {
		t.Fatalf("a FIFO: %d %s, want 422 not a regular file", code, b)
	}

	// The swapper puts the clip and a FIFO in turn at one path (rename(2) replaces it in one
	// step) while the adds run.
	target := filepath.Join(dir, "swapped.mp4")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			tmp := filepath.Join(dir, fmt.Sprint("tmp", i))
			var err error
			if i%2 == 0 {
				err = os.Link(clip, tmp)
			} else {
				err = syscall.Mkfifo(tmp, 0o600)
			}
			if err == nil {
				err = os.Rename(tmp, target)
			}
			if err != nil {
				t.Error(err)
				return
			}
		}
	}()
	opened, refused := 0, 0
	for i := range 40 {
		id := fmt.Sprint("s", i)
		switch code, b := add(id, target); {
		case code == http.StatusCreated:
			opened++
			e.want("DELETE", "/api/streams/"+id, "", 204, nil)
		case code == http.StatusUnprocessableEntity || code == http.StatusBadRequest:
			refused++
		default:
			t.Fatalf("add %d while the file is swapped: %d %s", i, code, b)
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("while swapped: %d opened, %d refused", opened, refused)
	for i := range 3 { // more than max_opening: no slot is held by a parked open
		e.want("POST", "/api/streams", fmt.Sprintf(`{"id":"after%d","source":%q}`, i, clip), 201, nil)
	}
}
