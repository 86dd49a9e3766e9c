package model_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/vinfer/vinfer/model"
)

var bundled = []string{"yolox_nano_416", "fastestdet_352", "ultraface_rfb_320"}

// cacheFiles lists the cache files in dir.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	f, err := filepath.Glob(filepath.Join(dir, "*.ortcache"))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestCacheColdThenHit: the first load optimizes and writes the cache, the second reads it
// with optimization off; both give the reference detections of the uncached model.
func TestCacheColdThenHit(t *testing.T) {
	dir := assets(t)
	cache := t.TempDir()
	images := map[string]string{"yolox_nano_416": "dog.jpg", "fastestdet_352": "person.jpg",
		"ultraface_rfb_320": "office_face_frame690.jpg"}
	for _, name := range bundled {
		t.Run(name, func(t *testing.T) {
			decl, err := model.Declare(filepath.Join(dir, "models", name+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			img := filepath.Join(dir, "images", images[name])
			var ref string
			for i, want := range []model.CacheState{model.CacheOff, model.CacheMiss, model.CacheHit} {
				l := model.Loader{CacheDir: cache, Logf: t.Logf}
				if i == 0 {
					l.CacheDir = ""
				}
				m, err := l.Load(decl)
				if err != nil {
					t.Fatal(err)
				}
				got := describe(detectImage(t, m, img))
				m.Close()
				t.Logf("%-4s load %v", m.Cache, m.LoadTime.Round(time.Millisecond/10))
				if m.Cache != want {
					t.Fatalf("load %d: cache %s, want %s", i, m.Cache, want)
				}
				if i == 0 {
					ref = got
				} else if got != ref {
					t.Errorf("%s: detections\n%s\nwant (uncached)\n%s", m.Cache, got, ref)
				}
			}
		})
	}
	if n := len(cacheFiles(t, cache)); n != len(bundled) {
		t.Errorf("%d cache files, want %d", n, len(bundled))
	}
}
