package source

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// nonblock keeps opening a FIFO that replaced a checked file from blocking.
const nonblock = syscall.O_NONBLOCK

// testHookChecked, set by tests, runs between CheckFile and the open with the checked path.
var testHookChecked func(real string)

// OpenFile opens, for reading, the regular file that CheckFile accepts, and checks the opened
// descriptor itself, so that what was checked and what is read are one file: the open neither
// blocks (O_NONBLOCK: a FIFO swapped in after the check) nor follows a symbolic link swapped in
// for the last component (O_NOFOLLOW), the descriptor must be a regular file (fstat), and the
// path the kernel gives for it (/proc/self/fd) must still lie in roots. Errors wrap the
// sentinels of CheckFile (ErrNotRegular for a swapped-in FIFO, link or directory) and quote
// path. The caller closes the file; FDPath names it for a library that opens by name.
func OpenFile(path string, roots []string) (*os.File, error) {
	real, err := CheckFile(path, roots)
	if err != nil {
		return nil, err
	}
	if testHookChecked != nil {
		testHookChecked(real)
	}
	f, err := os.OpenFile(real, os.O_RDONLY|nonblock|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s: %w: it was replaced by a symbolic link", path, ErrNotRegular)
		}
		return nil, fmt.Errorf("%s: %w", path, ErrNoFile)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: %w: it was replaced after the check", path, ErrNotRegular)
	}
	if roots != nil {
		now, err := os.Readlink(FDPath(f))
		if err != nil || !within(now, roots) {
			f.Close()
			return nil, fmt.Errorf("%s: %w (it was moved after the check)", path, ErrNotAllowed)
		}
	}
	return f, nil
}

// FDPath is the name under which the process reaches f's open file description's file again
// (Linux /proc/self/fd/N): opening it opens the same file, not whatever the original path
// names by then.
func FDPath(f *os.File) string { return "/proc/self/fd/" + strconv.Itoa(int(f.Fd())) }

// readFull reads until b is full or the end of the file.
func readFull(f *os.File, b []byte) (int, error) {
	n, err := io.ReadFull(f, b)
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}
