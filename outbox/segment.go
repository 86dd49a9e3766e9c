package outbox

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const (
	segHeaderSize = 16
	segMagic      = "VOBS"
	segVersion    = 1
	segExt        = ".seg"

	// indexStride is the spacing, in bytes, of a segment's in-memory index: locating a record
	// reads the headers of at most this many bytes of records.
	indexStride = 64 << 10
)

// indexEntry is the offset of the record with a sequence number.
type indexEntry struct {
	seq uint64
	off int64
}

// segment is one segment file and what is known of its valid contents. Fields are guarded by
// the Outbox's mutex; f may be read (ReadAt) without it while refs > 0.
type segment struct {
	path      string
	f         *os.File
	base      uint64 // sequence number of the first record
	last      uint64 // sequence number of the last record; base-1 when empty
	size      int64  // valid bytes, header included
	firstTime int64  // append time of the first record, Unix ns
	lastTime  int64  // append time of the last record, Unix ns
	idx       []indexEntry
	sealed    bool // no more appends
	removed   bool // deleted from the directory; f closed when refs drops to 0
	refs      int  // readers of f outside the mutex
}

func segName(base uint64) string { return fmt.Sprintf("%020d%s", base, segExt) }

// parseSegName returns the base sequence number of a segment file name.
func parseSegName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segExt)
	if !ok || len(digits) != 20 {
		return 0, false
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	return base, err == nil && base > 0
}

func segHeader(base uint64) []byte {
	b := make([]byte, segHeaderSize)
	copy(b, segMagic)
	binary.LittleEndian.PutUint32(b[4:], segVersion)
	binary.LittleEndian.PutUint64(b[8:], base)
	return b
}

// createSegment creates an empty segment file; with durable it syncs the file and directory.
func createSegment(dir string, base uint64, durable bool) (*segment, error) {
	path := filepath.Join(dir, segName(base))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, err
	}
	_, err = f.WriteAt(segHeader(base), 0)
	if err == nil && durable {
		err = f.Sync()
		if err == nil {
			err = syncDir(dir)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	return &segment{path: path, f: f, base: base, last: base - 1, size: segHeaderSize}, nil
}

func (s *segment) count() uint64 { return s.last + 1 - s.base }

// note records that the record seq, appended at unixNano, starts at off and ends at end.
func (s *segment) note(seq uint64, off, end, unixNano int64) {
	if len(s.idx) == 0 || off-s.idx[len(s.idx)-1].off >= indexStride {
		s.idx = append(s.idx, indexEntry{seq, off})
	}
	if seq == s.base {
		s.firstTime = unixNano
	}
	s.last, s.lastTime, s.size = seq, unixNano, end
}

// scan reads the segment's contents from r, which holds limit bytes, and sets the valid prefix
// (size, last, times, index). It returns nil at a clean end, errTorn or ErrCorrupt where the
// valid prefix ends early, or a read error. A length is checked against maxRecord and the bytes
// left before a buffer is allocated.
func (s *segment) scan(r io.Reader, limit int64, maxRecord int) error {
	s.size, s.last, s.idx = 0, s.base-1, nil
	br := bufio.NewReaderSize(r, 64<<10)
	var hb [recordHeaderSize]byte
	if err := readFull(br, hb[:segHeaderSize]); err != nil {
		return err
	}
	if string(hb[:4]) != segMagic || binary.LittleEndian.Uint32(hb[4:]) != segVersion ||
		binary.LittleEndian.Uint64(hb[8:]) != s.base {
		return ErrCorrupt
	}
	s.size = segHeaderSize
	var payload []byte
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return nil
		}
		if err := readFull(br, hb[:]); err != nil {
			return err
		}
		h := parseHeader(hb[:])
		if int64(h.n) > int64(maxRecord) {
			return ErrCorrupt
		}
		end := s.size + encodedSize(int(h.n))
		if end > limit {
			return errTorn
		}
		if cap(payload) < int(h.n) {
			payload = make([]byte, h.n)
		}
		payload = payload[:h.n]
		if err := readFull(br, payload); err != nil {
			return err
		}
		if checksum(hb[:], payload) != h.sum || h.seq != s.last+1 {
			return ErrCorrupt
		}
		s.note(h.seq, s.size, end, h.time)
	}
}

// readFull is io.ReadFull with a short read reported as errTorn.
func readFull(r io.Reader, b []byte) error {
	_, err := io.ReadFull(r, b)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errTorn
	}
	return err
}

// offsetOf returns the offset of record seq, base ≤ seq ≤ last+1 (last+1: the end). It reads
// record headers from the nearest index entry.
func (s *segment) offsetOf(seq uint64) (int64, error) {
	if seq > s.last {
		return s.size, nil
	}
	i := sort.Search(len(s.idx), func(i int) bool { return s.idx[i].seq > seq }) - 1
	if i < 0 {
		return 0, ErrCorrupt
	}
	off, cur := s.idx[i].off, s.idx[i].seq
	var hb [recordHeaderSize]byte
	for cur < seq {
		if _, err := s.f.ReadAt(hb[:], off); err != nil {
			return 0, err
		}
		off += encodedSize(int(binary.LittleEndian.Uint32(hb[:])))
		cur++
		if off > s.size {
			return 0, ErrCorrupt
		}
	}
	return off, nil
}

// timeAt returns the append time of the record at off.
func (s *segment) timeAt(off int64) (int64, error) {
	var hb [recordHeaderSize]byte
	if _, err := s.f.ReadAt(hb[:], off); err != nil {
		return 0, err
	}
	return parseHeader(hb[:]).time, nil
}

// read decodes records from off, the start of record seq, up to limit (a record boundary):
// at most maxRecords, and no more than maxBytes of encoded records unless the first alone is
// larger. It returns the records, their Data aliasing one new buffer, and the offset after the
// last. ErrCorrupt: a record fails its checks.
func (s *segment) read(off, limit int64, seq uint64, maxRecords, maxBytes, maxRecord int) ([]Record, int64, error) {
	n := min(limit-off, int64(maxBytes))
	if n < recordHeaderSize {
		n = min(limit-off, recordHeaderSize)
	}
	if n < recordHeaderSize {
		return nil, off, ErrCorrupt
	}
	buf := make([]byte, n)
	if _, err := s.f.ReadAt(buf, off); err != nil {
		return nil, off, err
	}
	if h := parseHeader(buf); encodedSize(int(h.n)) > n {
		// The first record alone exceeds maxBytes: read it whole.
		size := encodedSize(int(h.n))
		if int64(h.n) > int64(maxRecord) || off+size > limit {
			return nil, off, ErrCorrupt
		}
		buf = make([]byte, size)
		if _, err := s.f.ReadAt(buf, off); err != nil {
			return nil, off, err
		}
	}
	var recs []Record
	pos := 0
	for len(recs) < maxRecords && pos < len(buf) {
		r, size, err := decodeRecord(buf[pos:], maxRecord)
		if errors.Is(err, errTorn) {
			break // the rest is beyond maxBytes
		}
		if err != nil {
			return recs, off + int64(pos), err
		}
		if r.Seq != seq {
			return recs, off + int64(pos), ErrCorrupt
		}
		recs = append(recs, r)
		pos += size
		seq++
	}
	if len(recs) == 0 {
		return nil, off, ErrCorrupt // the record changed under us
	}
	return recs, off + int64(pos), nil
}

// syncDir fsyncs a directory, making entries created, renamed or removed in it durable.
func syncDir(dir string) error {
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
