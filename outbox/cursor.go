package outbox

import (
	"encoding/binary"
	"github.com/vinfer/vinfer/internal/atomicfile"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// A cursor file holds the sequence number of the last record a consumer acknowledged:
//
//	[0:4]   magic "VOBC"
//	[4:12]  sequence number, little endian
//	[12:16] CRC-32C of bytes [0:12]
const (
	cursorMagic = "VOBC"
	cursorSize  = 16
	cursorExt   = ".cursor"
	tmpExt      = atomicfile.TmpExt
)

// validName reports whether name is a valid consumer name.
func validName(name string) bool {
	if len(name) == 0 || len(name) > 64 {
		return false
	}
	for i, c := range []byte(name) {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '_' && c != '.' && c != '-') {
			return false
		}
	}
	return !strings.HasSuffix(name, tmpExt)
}

func encodeCursor(seq uint64) []byte {
	b := make([]byte, cursorSize)
	copy(b, cursorMagic)
	binary.LittleEndian.PutUint64(b[4:], seq)
	binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[:12], castagnoli))
	return b
}

// decodeCursor parses a cursor file's contents. ErrCorrupt: wrong size, magic or checksum.
func decodeCursor(b []byte) (uint64, error) {
	if len(b) != cursorSize || string(b[:4]) != cursorMagic ||
		binary.LittleEndian.Uint32(b[12:]) != crc32.Checksum(b[:12], castagnoli) {
		return 0, ErrCorrupt
	}
	return binary.LittleEndian.Uint64(b[4:]), nil
}

// readCursor reads a cursor file of at most cursorSize+1 bytes.
func readCursor(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	b := make([]byte, cursorSize+1)
	n, _ := f.ReadAt(b, 0)
	return decodeCursor(b[:n])
}

// writeCursor replaces a consumer's cursor file atomically: it writes a temporary file, syncs
// it, renames it over the cursor file and syncs the directory (no syncs unless durable). When
// the file system has no space for the temporary file, it overwrites the cursor file in place
// (its 16 bytes need no new block): a crash in the middle of that write leaves a cursor that
// fails its checksum, and the consumer starts again at the oldest record (duplicates, no loss).
func writeCursor(dir, name string, seq uint64, durable bool) error {
	err := replaceCursor(dir, name, seq, durable)
	if !noSpace(err) {
		return err
	}
	f, oerr := os.OpenFile(filepath.Join(dir, name+cursorExt), os.O_WRONLY, 0)
	if oerr != nil {
		return err
	}
	_, err = f.WriteAt(encodeCursor(seq), 0)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func replaceCursor(dir, name string, seq uint64, durable bool) error {
	create := func(name string) (atomicfile.File, error) {
		return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	}
	_, err := atomicfile.Write(filepath.Join(dir, name+cursorExt), atomicfile.Options{NoSync: !durable, Create: create},
		func(w io.Writer) error {
			_, err := w.Write(encodeCursor(seq))
			return err
		})
	return err
}
