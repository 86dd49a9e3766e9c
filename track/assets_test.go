package track

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// assetPath returns assets/rel in the repository, skipping the test when it is missing.
func assetPath(t testing.TB, rel string) string {
	t.Helper()
	_, f, _, _ := runtime.Caller(0)
	for d := filepath.Dir(f); filepath.Dir(d) != d; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			p := filepath.Join(d, "assets", rel)
			if _, err := os.Stat(p); err != nil {
				t.Skipf("%s missing (run scripts/setup.sh or scripts/assets.sh): %v", p, err)
			}
			return p
		}
	}
	t.Fatal("go.mod not found")
	return ""
}
