package source

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// openWithin runs OpenFile, failing the test when it has not returned within d (a thread
// parked in open(2)).
func openWithin(t *testing.T, path string, roots []string, d time.Duration) (*os.File, error) {
	t.Helper()
	type result struct {
		f   *os.File
		err error
	}
	done := make(chan result, 1)
	go func() { f, err := OpenFile(path, roots); done <- result{f, err} }()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(d):
		t.Fatalf("OpenFile(%s) still blocked after %v", path, d)
		return nil, nil
	}
}

// TestOpenFileSwapped: a checked file swapped, before the open, for a FIFO parked the thread
// in open(2) for ever (issue 25, item 5), and one swapped for a symbolic link would be read
// outside the roots. The open is of the checked name without blocking or following a link,
// and the descriptor itself is checked: both are refused at once.
func TestOpenFileSwapped(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("root:x:0:0"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "clip.mp4")
	for _, c := range []struct {
		name string
		swap func(path string) error
		want error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) }, ErrNotRegular},
		{"symlink", func(p string) error { return os.Symlink(secret, p) }, ErrNotRegular},
		{"directory", func(p string) error { return os.Mkdir(p, 0o700) }, ErrNotRegular},
	} {
		if err := os.RemoveAll(path); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("video"), 0o600); err != nil {
			t.Fatal(err)
		}
		testHookChecked = func(string) {
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
			if err := c.swap(path); err != nil {
				t.Error(err)
			}
		}
		f, err := openWithin(t, path, []string{dir}, 30*time.Second)
		testHookChecked = nil
		if f != nil {
			f.Close()
		}
		if !errors.Is(err, c.want) {
			t.Errorf("%s swapped in: %v, want %v", c.name, err, c.want)
		}
	}
	// Unchanged, the file opens, and reads back what was checked.
	if err := os.RemoveAll(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("video"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFile(path, []string{dir}, 100)
	if err != nil || string(b) != "video" {
		t.Fatalf("ReadFile: %q, %v", b, err)
	}
}
