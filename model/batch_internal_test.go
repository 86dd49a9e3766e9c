package model

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/infer"
)

// TestBatchCheckLoadErrorNotCached: when the check's sessions do not open (no memory, no ONNX
// Runtime), the model loads at batch 1, the reason is logged and nothing is cached; the next
// load checks again and caches the rewrite.
func TestBatchCheckLoadErrorNotCached(t *testing.T) {
	dir := t.TempDir()
	decl := config.Model{Name: "yolox", Path: yoloxPath(t), MaxBatch: 4, IntraOpThreads: 1}
	var logs []string
	l := Loader{CacheDir: dir, Logf: func(f string, a ...any) { logs = append(logs, f) }}
	openCheck = func(infer.Config) (*infer.Session, error) { return nil, errors.New("out of memory") }
	m, err := l.Load(decl)
	openCheck = infer.Open
	if err != nil {
		t.Fatal(err)
	}
	batch := m.Batch
	m.Close()
	if batch != "1" {
		t.Fatalf("batch %q with a failing check, want 1", batch)
	}
	if f, _ := filepath.Glob(filepath.Join(dir, "*.batch")); len(f) != 0 {
		t.Fatalf("cache files %v after a load error, want none", f)
	}
	if !strings.Contains(strings.Join(logs, "\n"), "not cached") {
		t.Errorf("the load error was not logged: %q", logs)
	}
	m, err = l.Load(decl)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Batch != BatchRewritten {
		t.Fatalf("second load: batch %q, want %q", m.Batch, BatchRewritten)
	}
	if f, _ := filepath.Glob(filepath.Join(dir, "*.batch")); len(f) != 1 {
		t.Fatalf("cache files %v after the second load, want the rewrite", f)
	}
}
