package image

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildStall is how long a build may print nothing before runBuild stops it: the scripts print
// a line at least every 30 s while a step makes progress (scripts/progress.sh).
const buildStall = 10 * time.Minute

// errStalled is runBuild's error for a build that printed nothing for the stall limit.
var errStalled = errors.New("build printed nothing for too long: stuck")

// stampWriter keeps what a command prints and when it last printed.
type stampWriter struct {
	mu   sync.Mutex
	buf  []byte
	last time.Time
}

func (w *stampWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	w.last = time.Now()
	return len(p), nil
}

func (w *stampWriter) idle() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.last)
}

func (w *stampWriter) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.buf...)
}

// runBuild runs cmd (in its own process group) to its end however long it takes while it
// prints; it kills the group and returns errStalled once cmd printed nothing for stall. It
// returns cmd's combined output.
func runBuild(cmd *exec.Cmd, stall time.Duration) ([]byte, error) {
	w := &stampWriter{last: time.Now()}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(stall / 10)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return w.bytes(), err
		case <-tick.C:
			if w.idle() >= stall {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				return w.bytes(), fmt.Errorf("%w (%s)", errStalled, stall)
			}
		}
	}
}

// TestRunBuildWaitsWhileProgressing: a build that prints now and then runs past the stall
// limit to its end; one that stops printing is stopped once the limit passes, before its end.
func TestRunBuildWaitsWhileProgressing(t *testing.T) {
	const stall = 3 * time.Second
	start := time.Now()
	out, err := runBuild(exec.Command("sh", "-c", "i=0; while [ $i -lt 40 ]; do echo step $i; sleep 0.2; i=$((i+1)); done"), stall)
	if err != nil {
		t.Fatalf("a build printing every 0.2 s: %v\n%s", err, out)
	}
	if took := time.Since(start); took < stall || !strings.Contains(string(out), "step 39") {
		t.Fatalf("took %s (want over the %s stall limit: 40 × 0.2 s), output %q", took, stall, out)
	}

	out, err = runBuild(exec.Command("sh", "-c", "echo started; sleep 600; echo never"), stall)
	if !errors.Is(err, errStalled) || strings.Contains(string(out), "never") {
		t.Fatalf("a silent build: err %v, output %q; want errStalled, before its end", err, out)
	}
}

// TestCacheKeyedByInputs: the static FFmpeg and the image's base live in the machine's cache,
// outside the clone ($VINFER_CACHE, else ~/.cache/vinfer), under a name that changes with the
// script that builds them.
func TestCacheKeyedByInputs(t *testing.T) {
	root := repoRoot(t)
	cache := t.TempDir()
	prefix := func(script string) string {
		t.Helper()
		cmd := exec.Command("bash", script, "--prefix")
		cmd.Env = append(os.Environ(), "VINFER_CACHE="+cache)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s --prefix: %v\n%s", script, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	p := prefix(filepath.Join(root, "scripts", "build-ffmpeg-static.sh"))
	if filepath.Dir(p) != cache || !strings.HasPrefix(filepath.Base(p), "ffmpeg-static-") {
		t.Fatalf("prefix %s, want $VINFER_CACHE/ffmpeg-static-KEY", p)
	}
	if again := prefix(filepath.Join(root, "scripts", "build-ffmpeg-static.sh")); again != p {
		t.Fatalf("prefix %s then %s: want the same for the same inputs", p, again)
	}
	// A copy of the scripts with one configure option more: another KEY, so it builds anew.
	tree := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(tree, "scripts"), 0o755))
	for _, f := range []string{"build-ffmpeg-static.sh", "progress.sh"} {
		b, err := os.ReadFile(filepath.Join(root, "scripts", f))
		must(t, err)
		if f == "build-ffmpeg-static.sh" {
			b = []byte(strings.Replace(string(b), "--enable-pic", "--enable-pic --enable-small", 1))
		}
		must(t, os.WriteFile(filepath.Join(tree, "scripts", f), b, 0o755))
	}
	if q := prefix(filepath.Join(tree, "scripts", "build-ffmpeg-static.sh")); q == p || filepath.Dir(q) != cache {
		t.Fatalf("changed configure line: prefix %s, want another one in %s than %s", q, cache, p)
	}
	// Without VINFER_CACHE: ~/.cache/vinfer, never inside the clone.
	cmd := exec.Command("bash", filepath.Join(root, "scripts", "build-ffmpeg-static.sh"), "--prefix")
	cmd.Env = append(os.Environ(), "VINFER_CACHE=", "XDG_CACHE_HOME=", "HOME="+cache)
	out, err := cmd.CombinedOutput()
	must(t, err)
	if got := filepath.Dir(strings.TrimSpace(string(out))); got != filepath.Join(cache, ".cache", "vinfer") {
		t.Fatalf("default cache %s, want $HOME/.cache/vinfer", got)
	}
}

// TestImageCacheFound: scripts/image-cache.sh --check (TestRuntimeImage's question) says
// whether the base and the static FFmpeg of the current inputs are in the cache; with both
// there, image-cache.sh (which scripts/setup.sh and scripts/test.sh run) says so and builds
// nothing; a change of the base's inputs (docker/runtime-packages) names another base, so it
// is built anew; without them it needs root (as another user it fails at once, it never
// passes without the cache).
func TestImageCacheFound(t *testing.T) {
	root := repoRoot(t)
	cache := t.TempDir()
	run := func(tree string, args ...string) (string, error) {
		t.Helper()
		cmd := exec.Command("bash", append([]string{filepath.Join(tree, "scripts", "image-cache.sh")}, args...)...)
		cmd.Env = append(os.Environ(), "VINFER_CACHE="+cache)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	key := func(tree, script, arg string) string {
		t.Helper()
		cmd := exec.Command("bash", filepath.Join(tree, script), arg)
		cmd.Env = append(os.Environ(), "VINFER_CACHE="+cache)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", script, arg, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	base := key(root, "docker/rootfs.sh", "--key")
	ffmpeg := key(root, "scripts/build-ffmpeg-static.sh", "--prefix")
	if filepath.Dir(base) != cache || !strings.HasPrefix(filepath.Base(base), "rootfs-base-") {
		t.Fatalf("base %s, want $VINFER_CACHE/rootfs-base-KEY", base)
	}
	out, err := run(root, "--check")
	if err == nil || !strings.Contains(out, "not cached") {
		t.Fatalf("image-cache.sh --check, nothing cached: %v\n%s; want exit status 3", err, out)
	}
	for _, stamp := range []string{filepath.Join(base, ".vinfer-base"), filepath.Join(ffmpeg, ".complete")} {
		must(t, os.MkdirAll(filepath.Dir(stamp), 0o755))
		must(t, os.WriteFile(stamp, nil, 0o644))
	}
	for _, args := range [][]string{nil, {"--check"}} {
		out, err := run(root, args...)
		if err != nil || !strings.Contains(out, "[image-cache] cached: "+base+", "+ffmpeg) {
			t.Fatalf("image-cache.sh %v with both cached: %v\n%s", args, err, out)
		}
	}
	entries, err := os.ReadDir(cache)
	must(t, err)
	if len(entries) != 2 {
		t.Fatalf("image-cache.sh with both cached left %d entries in the cache, want the 2 there", len(entries))
	}

	// A copy of the tree with one runtime package more: another base.
	tree := t.TempDir()
	for _, f := range []string{"docker/rootfs.sh", "docker/runtime-packages", "docker/runtime-setup.sh",
		"scripts/image-cache.sh", "scripts/progress.sh", "scripts/build-ffmpeg-static.sh"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		must(t, err)
		if f == "docker/runtime-packages" {
			b = append(b, "tzdata\n"...)
		}
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(tree, f)), 0o755))
		must(t, os.WriteFile(filepath.Join(tree, f), b, 0o755))
	}
	if other := key(tree, "docker/rootfs.sh", "--key"); other == base || filepath.Dir(other) != cache {
		t.Fatalf("changed runtime packages: base %s, want another one in %s than %s", other, cache, base)
	}
	if key(tree, "scripts/build-ffmpeg-static.sh", "--prefix") != ffmpeg {
		t.Fatal("changed runtime packages changed the static FFmpeg's key too")
	}
	if os.Getuid() != 0 {
		return
	}
	// Not cached, as another user: it fails at once, saying why.
	must(t, os.Chmod(filepath.Dir(tree), 0o755)) // t.TempDir's folders are root's alone
	must(t, os.Chmod(tree, 0o755))
	cmd := exec.Command("bash", filepath.Join(tree, "scripts", "image-cache.sh"))
	cmd.Env = append(os.Environ(), "VINFER_CACHE="+cache)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "needs root") {
		t.Fatalf("image-cache.sh, base missing, not root: %v\n%s; want a failure that says it needs root", err, b)
	}
}
