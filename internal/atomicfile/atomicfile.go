// Package atomicfile replaces files so that a crash leaves either the old file or the new one
// whole, never a mix: write a temporary file beside it, sync it, rename it over the target,
// sync the directory (POSIX rename(2) is atomic within a file system).
package atomicfile

import (
	"io"
	"os"
	"path/filepath"
)

// TmpExt is the suffix of the temporary file; one left over by a crash can be removed.
const TmpExt = ".tmp"

// File is a file being written; *os.File is one.
type File interface {
	io.Writer
	Sync() error
	Close() error
}

// Options tune Write.
type Options struct {
	// NoSync skips both syncs: the replacement is atomic but not durable (tests, caches).
	NoSync bool
	// Create opens the temporary file (default: os.OpenFile with O_TRUNC and mode 0o644).
	Create func(name string) (File, error)
}

// Write replaces path with what write writes, returning the bytes written. On error the
// temporary file is removed and path is left as it was.
func Write(path string, o Options, write func(io.Writer) error) (int64, error) {
	if o.Create == nil {
		o.Create = func(name string) (File, error) {
			return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
		}
	}
	tmp := path + TmpExt
	f, err := o.Create(tmp)
	if err != nil {
		return 0, err
	}
	cw := &countWriter{w: f}
	err = write(cw)
	if err == nil && !o.NoSync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if !o.NoSync {
		if err := SyncDir(filepath.Dir(path)); err != nil {
			return cw.n, err
		}
	}
	return cw.n, nil
}

// SyncDir fsyncs a directory, making entries created, renamed or removed in it durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
