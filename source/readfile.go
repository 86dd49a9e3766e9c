package source

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// nonblock keeps opening a FIFO that replaced a checked file from blocking.
const nonblock = syscall.O_NONBLOCK

// readFull reads until b is full or the end of the file.
func readFull(f *os.File, b []byte) (int, error) {
	n, err := io.ReadFull(f, b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}
