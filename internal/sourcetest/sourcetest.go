// Package sourcetest holds test helpers shared by the live sources' tests: the repository's
// video clips as reference access units, byte-exact matching of what a source delivers, RTP
// packetization of a clip, and real peers (ffmpeg, a lossy UDP relay) on loopback.
// It is imported by tests only.
package sourcetest

import (
	"os/exec"
	"testing"

	"github.com/vinfer/vinfer/internal/testutil"
)

// Root returns the repository root (the directory holding go.mod).
func Root(t testing.TB) string { return testutil.Root(t) }

// Asset returns the path of a file under assets/, failing the test when it is missing
// (scripts/setup.sh installs the assets).
func Asset(t testing.TB, rel string) string { return testutil.Asset(t, rel) }

// Tool returns the path of an external program, skipping the test when it is not installed.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed (Debian package ffmpeg): %v", name, err)
	}
	return p
}
