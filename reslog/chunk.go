package reslog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Chunk files: the magic, then blocks of a header and a zstd payload.
const (
	magic     = "VRL1"
	headerLen = 24
	chunkExt  = ".rlog"
	// maxBlock bounds one block's compressed payload (a header saying more is a torn tail).
	maxBlock = 16 << 20
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// blockHeader is a block's 24 bytes: payload length, CRC-32C of the payload, first and last
// frame's wall time (Unix µs), little endian.
type blockHeader struct {
	n           uint32
	crc         uint32
	first, last int64
}

func (h blockHeader) append(b []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, h.n)
	b = binary.LittleEndian.AppendUint32(b, h.crc)
	b = binary.LittleEndian.AppendUint64(b, uint64(h.first))
	return binary.LittleEndian.AppendUint64(b, uint64(h.last))
}

func parseHeader(b []byte) blockHeader {
	return blockHeader{n: binary.LittleEndian.Uint32(b), crc: binary.LittleEndian.Uint32(b[4:]),
		first: int64(binary.LittleEndian.Uint64(b[8:])), last: int64(binary.LittleEndian.Uint64(b[16:]))}
}

// chunkName is the file name of a chunk whose first frame has wall time t.
func chunkName(t time.Time) string { return fmt.Sprintf("%020d%s", max(t.UnixMicro(), 0), chunkExt) }

// chunkInfo is one chunk file of a stream.
type chunkInfo struct {
	path  string
	start int64 // first frame's wall µs (its name)
	size  int64
}

// chunks lists a stream directory's chunk files, oldest first; other names are ignored.
func chunks(dir string) ([]chunkInfo, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	var out []chunkInfo
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), chunkExt)
		if !ok || len(name) != 20 || !e.Type().IsRegular() {
			continue
		}
		start, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		out = append(out, chunkInfo{path: filepath.Join(dir, e.Name()), start: start, size: size})
	}
	slices.SortFunc(out, func(a, b chunkInfo) int { return int(min(max(a.start-b.start, -1), 1)) })
	return out, nil
}

// scan reads a chunk's blocks in order, calling fn with each header and payload (payload only
// when want says so for the header); it returns the offset after the last whole block, and
// whether the file has more (a torn or corrupt tail).
func scan(r io.ReaderAt, size int64, want func(blockHeader) bool, fn func(blockHeader, []byte) error) (good int64, torn bool, err error) {
	var m [len(magic)]byte
	if _, err := r.ReadAt(m[:], 0); err != nil || string(m[:]) != magic {
		return 0, true, nil
	}
	off := int64(len(magic))
	var hb [headerLen]byte
	var payload []byte
	for off < size {
		if _, err := r.ReadAt(hb[:], off); err != nil {
			return off, true, nil
		}
		h := parseHeader(hb[:])
		end := off + headerLen + int64(h.n)
		if h.n > maxBlock || end > size || h.last < h.first {
			return off, true, nil
		}
		if want == nil || want(h) {
			payload = slices.Grow(payload[:0], int(h.n))[:h.n]
			if _, err := r.ReadAt(payload, off+headerLen); err != nil {
				return off, true, nil
			}
			if crc32.Checksum(payload, castagnoli) != h.crc {
				return off, true, nil
			}
			if err := fn(h, payload); err != nil {
				return off, false, err
			}
		}
		off = end
	}
	return off, false, nil
}

// repair cuts a chunk's torn or corrupt tail (checking every block's CRC): the file keeps its
// whole blocks, and a file without any is removed. It reports whether it cut anything.
func repair(path string) (bool, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	good, torn, err := scan(f, fi.Size(), nil, func(blockHeader, []byte) error { return nil })
	if err != nil || !torn {
		return false, err
	}
	if good <= int64(len(magic)) {
		f.Close()
		return true, os.Remove(path)
	}
	if err := f.Truncate(good); err != nil {
		return true, err
	}
	return true, f.Sync()
}
