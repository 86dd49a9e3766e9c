package sink

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/internal/testutil"
)

// TestJSONLFlushesWhileOpen reads the file of an open jsonl sink: a line written appears
// without further lines and without Close (the 100 ms timer writes it out), and Close then
// stops the timer.
func TestJSONLFlushesWhileOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := JSONLKind.Open(config.NewSink("jsonl", map[string]any{"path": "out.jsonl"}), Env{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "out.jsonl")
	lines := func() int {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}
	for want := 1; want <= 3; want++ {
		if err := s.Write(sample()); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, "the line in the file while the sink is open", func() bool { return lines() == want })
	}
	j := s.(*JSONL)
	if err := j.Write(sample()); err != nil { // waits for the timer; Close writes it out first
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if n := lines(); n != 4 {
		t.Fatalf("%d lines after Close, want 4", n)
	}
	j.mu.Lock()
	stopped := j.timer == nil || !j.timer.Stop()
	j.mu.Unlock()
	if !stopped {
		t.Fatal("timer still armed after Close")
	}
	if err := j.Write(sample()); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("Write after Close: %v", err)
	}
	if err := j.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// TestJSONLConcurrent writes from several goroutines while the timer flushes (run with -race):
// every line arrives whole.
func TestJSONLConcurrent(t *testing.T) {
	dir := t.TempDir()
	s, err := JSONLKind.Open(config.NewSink("jsonl", map[string]any{"path": "out.jsonl"}), Env{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 200 {
				if err := s.Write(sample()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.(*JSONL).Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, `{"source":`) || !strings.HasSuffix(l, "}") {
			t.Fatalf("torn line %q", l)
		}
	}
}
