package source

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Errors of CheckFile; each is wrapped with the path.
var (
	// ErrNameTooLong: a path component over MaxNameLen bytes, or a path over MaxPathLen.
	ErrNameTooLong = errors.New("file name too long")
	// ErrNotAllowed: the file lies outside the allowed directories.
	ErrNotAllowed = errors.New("file is outside the allowed directories")
	// ErrNotRegular: a directory, FIFO, device or socket instead of a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrNoFile: the file does not exist or cannot be read.
	ErrNoFile = errors.New("no such file")
	// ErrTooLarge: the file is larger than the caller accepts.
	ErrTooLarge = errors.New("file too large")
)

// Path limits (Linux NAME_MAX and PATH_MAX).
const (
	MaxNameLen = 255
	MaxPathLen = 4095
)

// CheckFile returns the absolute path path names, symlinks resolved, once it is known to be a
// regular file inside one of roots (any path when roots is nil). Errors wrap the sentinels
// above and quote path, never the file's contents.
func CheckFile(path string, roots []string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%w: empty path", ErrNoFile)
	}
	if strings.IndexByte(path, 0) >= 0 {
		return "", fmt.Errorf("%w: path holds a NUL byte", ErrNoFile)
	}
	if len(path) > MaxPathLen {
		return "", fmt.Errorf("%w: path of %d bytes (at most %d)", ErrNameTooLong, len(path), MaxPathLen)
	}
	for _, part := range strings.Split(path, "/") {
		if len(part) > MaxNameLen {
			return "", fmt.Errorf("%w: a path component of %d bytes (at most %d)", ErrNameTooLong, len(part), MaxNameLen)
		}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrNoFile, path)
	}
	// Outside the roots as written is refused before the file is looked at: whether it exists
	// is not the client's to learn.
	if roots != nil && !within(abs, roots) {
		return "", fmt.Errorf("%s: %w (sources.allow_paths in the config lists them)", path, ErrNotAllowed)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%s: %w: check the path (relative paths start at the working directory)", path, ErrNoFile)
	}
	if roots != nil && !within(real, roots) {
		return "", fmt.Errorf("%s: %w (sources.allow_paths in the config lists them)", path, ErrNotAllowed)
	}
	st, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, ErrNoFile)
	}
	if !st.Mode().IsRegular() {
		what := "a directory"
		if !st.IsDir() {
			what = "a special file (FIFO, device or socket)"
		}
		return "", fmt.Errorf("%s: %w: it is %s", path, ErrNotRegular, what)
	}
	return real, nil
}

// within reports whether path (absolute, clean) lies in one of roots, as written or with
// their symlinks resolved.
func within(path string, roots []string) bool {
	in := func(root string) bool {
		rel, err := filepath.Rel(root, path)
		return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
	}
	for _, r := range roots {
		if in(r) {
			return true
		}
		if rr, err := filepath.EvalSymlinks(r); err == nil && in(rr) {
			return true
		}
	}
	return false
}

// ReadFile reads a small regular file that OpenFile accepts, at most max bytes.
func ReadFile(path string, roots []string, max int64) ([]byte, error) {
	f, err := OpenFile(path, roots)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, ErrNoFile)
	} else if st.Size() > max {
		return nil, fmt.Errorf("%s: %w: %d bytes (at most %d)", path, ErrTooLarge, st.Size(), max)
	}
	b := make([]byte, max+1)
	n, err := readFull(f, b)
	if err != nil {
		return nil, fmt.Errorf("%s: reading: %w", path, ErrNoFile)
	}
	if int64(n) > max {
		return nil, fmt.Errorf("%s: %w (at most %d bytes)", path, ErrTooLarge, max)
	}
	return b[:n], nil
}
