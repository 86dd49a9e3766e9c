package model_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/model"
)

// logSink collects a Loader's log lines.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func batchFiles(t *testing.T, dir, ext string) []string {
	t.Helper()
	f, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestLoadRewritesBatch: YOLOX-Nano (batch fixed at 1) declared with max_batch 4 loads as a
// dynamic-batch model that runs a batch of 4; the rewrite is cached and a second load reads it;
// a damaged cache file is rewritten.
func TestLoadRewritesBatch(t *testing.T) {
	dir := t.TempDir()
	decl := yoloxDecl(t)
	decl.MaxBatch, decl.IntraOpThreads = 4, 1
	var logs logSink
	l := model.Loader{CacheDir: dir, Logf: logs.logf}
	for i, want := range []string{"miss", "hit", "damaged"} {
		m, err := l.Load(decl)
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch != model.BatchRewritten || m.MaxBatch() != 4 {
			t.Fatalf("load %d (%s): batch %q, max %d; want %q, 4", i, want, m.Batch, m.MaxBatch(), model.BatchRewritten)
		}
		if _, err := m.Input(4); err != nil {
			t.Fatal(err)
		}
		outs, err := m.Run(4)
		if err != nil {
			t.Fatal(err)
		}
		if s := outs[0].Shape; s[0] != 4 || s[1] != 3549 || s[2] != 85 {
			t.Fatalf("output shape %v", s)
		}
		m.Close()
		files := batchFiles(t, dir, ".batch")
		if len(files) != 1 {
			t.Fatalf("batch cache files %v, want 1", files)
		}
		if want == "hit" { // damage it for the third load
			if err := os.WriteFile(files[0], []byte("vinfer-batch-1\n\ngarbage garbage garbage garbage garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !strings.Contains(logs.String(), "checksum mismatch: rewriting again") {
		t.Errorf("the damaged cache file was not reported:\n%s", logs.String())
	}
}

// TestLoadBatchOne: without max_batch the CPU load keeps the model as it is.
func TestLoadBatchOne(t *testing.T) {
	decl := yoloxDecl(t)
	decl.IntraOpThreads = 1
	dir := t.TempDir()
	m, err := (&model.Loader{CacheDir: dir}).Load(decl)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.Batch != "1" || m.MaxBatch() != 1 {
		t.Fatalf("batch %q, max %d; want 1, 1", m.Batch, m.MaxBatch())
	}
	if f := batchFiles(t, dir, ".batch"); len(f) != 0 {
		t.Fatalf("batch cache files %v, want none", f)
	}
}

// TestLoadBatchRefused: FastestDet's channel shuffle folds the batch into its Reshapes: with
// max_batch 4 it loads at batch 1, the reason logged once and cached.
func TestLoadBatchRefused(t *testing.T) {
	dir := t.TempDir()
	decl, err := model.Declare(filepath.Join(assets(t), "models", "fastestdet_352.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	decl.MaxBatch, decl.IntraOpThreads = 4, 1
	var logs logSink
	l := model.Loader{CacheDir: dir, Logf: logs.logf}
	for range 2 {
		m, err := l.Load(decl)
		if err != nil {
			t.Fatal(err)
		}
		if m.Batch != "1" || m.MaxBatch() != 1 {
			t.Fatalf("batch %q, max %d; want 1, 1", m.Batch, m.MaxBatch())
		}
		m.Close()
	}
	if n := strings.Count(logs.String(), "batch stays 1 (max_batch 4 ignored): Reshape Reshape_13 to [24 2 1936] puts 24 first"); n != 1 {
		t.Errorf("reason logged %d times, want 1:\n%s", n, logs.String())
	}
	if f := batchFiles(t, dir, ".batch"); len(f) != 1 {
		t.Errorf("batch cache files %v, want the refusal", f)
	}
}

// TestLoadBatchGarbage: a truncated model declared with max_batch fails to load with ONNX
// Runtime's clear error, not a crash.
func TestLoadBatchGarbage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(assets(t), "models", "yolox_nano_416.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cut.onnx")
	if err := os.WriteFile(p, b[:len(b)/3], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = (&model.Loader{CacheDir: t.TempDir()}).Load(config.Model{Name: "cut", Path: p, MaxBatch: 4})
	if err == nil || !strings.Contains(err.Error(), "not a valid ONNX model") {
		t.Fatalf("err = %v, want a not-valid-ONNX error", err)
	}
}
