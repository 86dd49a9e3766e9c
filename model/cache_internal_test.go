package model

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/infer"
)

func yoloxPath(t testing.TB) string {
	t.Helper()
	_, f, _, _ := runtime.Caller(0)
	for d := filepath.Dir(f); filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "assets", "models", "yolox_nano_416.onnx")
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("%s missing: run scripts/setup.sh", p)
			}
			return p
		}
	}
	t.Fatal("go.mod not found")
	return ""
}

// TestCacheDamaged: every kind of damaged cache file is detected, the model loads from the
// original (CacheInvalid), and the rewritten file is a hit next time.
func TestCacheDamaged(t *testing.T) {
	decl := config.Model{Name: "yolox", Path: yoloxPath(t)}
	for _, tc := range []struct {
		name   string
		damage func(b []byte) []byte
	}{
		{"flipped byte", func(b []byte) []byte { b[len(b)/2] ^= 0x40; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"header only", func(b []byte) []byte { return b[:cacheHeader] }},
		{"empty", func(b []byte) []byte { return nil }},
		{"no header", func(b []byte) []byte { return b[cacheHeader:] }},
		{"sound checksum, not ONNX", func([]byte) []byte {
			junk := []byte(strings.Repeat("not a model ", 1000))
			sum := sha256.Sum256(junk)
			return append(append([]byte(cacheMagic), sum[:]...), junk...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Loader{CacheDir: t.TempDir(), Logf: t.Logf}
			for i, want := range []CacheState{CacheMiss, CacheInvalid, CacheHit} {
				if i == 1 {
					files, _ := filepath.Glob(filepath.Join(l.CacheDir, "*.ortcache"))
					if len(files) != 1 {
						t.Fatalf("cache files %v, want 1", files)
					}
					b, err := os.ReadFile(files[0])
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(files[0], tc.damage(b), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				m, err := l.Load(decl)
				if err != nil {
					t.Fatalf("load %d: %v", i, err)
				}
				m.Close()
				if m.Cache != want {
					t.Fatalf("load %d: cache %s, want %s", i, m.Cache, want)
				}
			}
		})
	}
}

// TestCacheUnwritable: a cache directory that cannot be created disables the cache without
// failing the load.
func TestCacheUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o644)
	var logs []string
	l := Loader{CacheDir: filepath.Join(file, "cache"), Logf: func(f string, a ...any) { logs = append(logs, f) }}
	m, err := l.Load(config.Model{Path: yoloxPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	if m.Cache != CacheOff || len(logs) != 1 || !strings.Contains(logs[0], "cache disabled") {
		t.Errorf("cache %s, logs %q; want off and one 'cache disabled' line", m.Cache, logs)
	}
}

// TestCachePrune: only the cacheKeep most recently used files of a model stay.
func TestCachePrune(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	for i := 0; i < 5; i++ {
		p := filepath.Join(dir, cacheName("yolox", strings.Repeat(string(rune('a'+i)), 32)))
		os.WriteFile(p, []byte("stale"), 0o644)
		os.Chtimes(p, old, old.Add(time.Duration(i)*time.Minute))
	}
	other := filepath.Join(dir, cacheName("other", strings.Repeat("f", 32)))
	os.WriteFile(other, []byte("another model's"), 0o644)
	tmp := filepath.Join(dir, cacheName("yolox", strings.Repeat("a", 32))) + ".1-abc.tmp"
	os.WriteFile(tmp, nil, 0o644)
	os.Chtimes(tmp, old, old)
	m, err := (&Loader{CacheDir: dir}).Load(config.Model{Name: "yolox", Path: yoloxPath(t)})
	if err != nil {
		t.Fatal(err)
	}
	m.Close()
	files, _ := filepath.Glob(filepath.Join(dir, "yolox-*"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	// The new file and the two most recent stale ones ("e…", "d…").
	if len(files) != cacheKeep || !strings.Contains(strings.Join(names, " "), "yolox-eeee") ||
		!strings.Contains(strings.Join(names, " "), "yolox-dddd") {
		t.Errorf("kept %v", names)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another model's cache file was removed: %v", err)
	}
}

// TestCacheKey: the key follows the model bytes and provider options, and is stable.
func TestCacheKey(t *testing.T) {
	a, b := sha256.Sum256([]byte("a")), sha256.Sum256([]byte("b"))
	cpu := &infer.Config{}
	opts := &infer.Config{Provider: infer.ProviderCUDA, ProviderOptions: map[string]string{"prefer_nhwc": "1"}}
	ka := cacheKey(a, cpu)
	if ka == "" || len(ka) != 32 {
		t.Fatalf("key %q", ka)
	}
	if ka != cacheKey(a, &infer.Config{Provider: infer.ProviderCPU}) {
		t.Error("the default provider and \"cpu\" give different keys")
	}
	cfgd := &infer.Config{ConfigEntries: map[string]string{"optimization.disable_specified_optimizers": "ConvActivationFusion"}}
	for _, k := range []string{cacheKey(b, cpu), cacheKey(a, opts), cacheKey(a, &infer.Config{Provider: infer.ProviderCUDA}),
		cacheKey(a, cfgd)} {
		if k == ka {
			t.Error("different inputs give the same key")
		}
	}
	if cacheable(infer.ProviderTensorRT) {
		t.Error("TensorRT graphs are not saveable")
	}
	t.Logf("cpu features: %s", cpuFeatures())
}

// TestCacheBadModel: a model that does not load fails with its own error through the cache and
// leaves nothing in the cache directory.
func TestCacheBadModel(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.onnx")
	os.WriteFile(bad, []byte("not a model"), 0o644)
	l := Loader{CacheDir: t.TempDir(), Logf: t.Logf}
	_, err := l.Load(config.Model{Path: bad})
	if err == nil || !strings.Contains(err.Error(), "not a valid ONNX model") {
		t.Fatalf("error %v, want 'not a valid ONNX model'", err)
	}
	if left, _ := os.ReadDir(l.CacheDir); len(left) != 0 {
		t.Errorf("left in the cache directory: %v", left)
	}
}
