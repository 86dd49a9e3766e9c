package model

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps a file read-only. ONNX Runtime parses the bytes straight from the page cache
// (CreateSessionFromArray) instead of from a copy in the Go heap; call unmap once the session
// is created. The stamp identifies the file version mapped (for change detection).
func mapFile(path string) (data []byte, unmap func(), st stamp, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, stamp{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, stamp{}, err
	}
	if fi.IsDir() {
		return nil, nil, stamp{}, fmt.Errorf("%s is a directory, not an .onnx file", path)
	}
	if fi.Size() == 0 {
		return nil, nil, stamp{}, fmt.Errorf("%s is empty", path)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, stamp{}, fmt.Errorf("mmap %s: %w", path, err)
	}
	return b, func() { syscall.Munmap(b) }, stampOf(fi), nil
}
