// Package sourcetest holds test helpers shared by the live sources' tests: the repository's
// video clips as reference access units, byte-exact matching of what a source delivers, RTP
// packetization of a clip, and real peers (ffmpeg, a lossy UDP relay) on loopback.
// It is imported by tests only.
package sourcetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Root returns the repository root (the directory holding go.mod), failing the test when there
// is none above the working directory.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("sourcetest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Asset returns the path of a file under assets/, failing the test when it is missing
// (scripts/setup.sh installs the assets).
func Asset(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Root(t), "assets", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("sourcetest: asset %s missing (run scripts/setup.sh): %v", rel, err)
	}
	return p
}

// Tool returns the path of an external program, skipping the test when it is not installed.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (Debian package ffmpeg): %v", name, err)
	}
	return p
}
