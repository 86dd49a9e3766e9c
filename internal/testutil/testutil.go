// Package testutil holds what vinfer's tests share: finding the repository and its assets, a
// goroutine-safe log buffer for checking what a running system logged (frame leaks, errors), and
// the ways a test waits (Eventually, Within, Blocking) instead of sleeping before an assertion.
// It is imported by tests only.
package testutil

import (
	"bytes"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Root returns the repository root (the directory holding go.mod) above the working directory.
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
			t.Fatal("testutil: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Asset returns the path of a file under assets/, failing the test when it is missing
// (scripts/setup.sh installs the assets; CI runs it first).
func Asset(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Root(t), "assets", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("asset %s missing (run scripts/setup.sh): %v", rel, err)
	}
	return p
}

// LogBuffer collects log output; safe for concurrent use.
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Count returns how many times substr was written (across writes).
func (l *LogBuffer) Count(substr string) int { return strings.Count(l.String(), substr) }

// CheckNoFrameLeaks fails the test when the log reports frames never released or released
// twice (frame pools in debug mode report them when they close).
func CheckNoFrameLeaks(t testing.TB, logs *LogBuffer) {
	t.Helper()
	if l := logs.String(); strings.Contains(l, "never released") || strings.Contains(l, "double Release") {
		t.Fatalf("frame accounting: %s", l)
	}
}

// FreeAddr returns a TCP address on 127.0.0.1 that was free a moment ago ("127.0.0.1:port"),
// for a peer the test starts on it.
func FreeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// FreePort is FreeAddr's port.
func FreePort(t testing.TB) int {
	t.Helper()
	_, port, _ := net.SplitHostPort(FreeAddr(t))
	p, _ := strconv.Atoi(port)
	return p
}

var (
	pairsMu    sync.Mutex
	pairsGiven = map[int]bool{}
)

// UDPPortPair returns an even port p with p and p+1 free on 127.0.0.1 (RTP and RTCP). Pairs
// come from 20000–32767, below Linux's ephemeral range (so no socket the kernel numbers takes
// p+1 later), and no pair is handed out twice in one test binary.
func UDPPortPair(t testing.TB) int {
	t.Helper()
	for range 200 {
		p := 20000 + 2*rand.IntN(6384)
		pairsMu.Lock()
		taken := pairsGiven[p]
		pairsGiven[p] = true
		pairsMu.Unlock()
		if taken {
			continue
		}
		a, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		b, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(p+1))
		a.Close()
		if err != nil {
			continue
		}
		b.Close()
		return p
	}
	t.Fatal("testutil: no free UDP port pair")
	return 0
}
