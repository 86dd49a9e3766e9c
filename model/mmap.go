package model

import (
	"fmt"
	"os"
	"syscall"
)

// mapFile maps a model file read-only. ONNX Runtime parses the bytes straight from the page
// cache (CreateSessionFromArray) instead of from a copy in the Go heap; unmap after the session
// is created.
func mapFile(path string) (data []byte, unmap func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, fmt.Errorf("%s is a directory, not an .onnx file", path)
	}
	if fi.Size() == 0 {
		return nil, nil, fmt.Errorf("%s is empty", path)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_PRIVATE)
	if err != nil {
		return nil, nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return b, func() { syscall.Munmap(b) }, nil
}
