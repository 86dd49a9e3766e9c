package record

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Errors of the queries.
var (
	ErrNoStream  = errors.New("record: not a stream id")
	ErrNoSegment = errors.New("record: no such segment")
	ErrTooLong   = errors.New("record: the range is longer than MaxExport")
	ErrNothing   = errors.New("record: no recorded video in the range")
)

// MaxExport bounds the time range one export covers.
const MaxExport = time.Hour

// maxFragment bounds one fragment (a GOP) or init section an export reads into memory.
const maxFragment = 256 << 20

// Segments returns stream's segments overlapping [from, to) (zero to: no end), oldest first,
// with their zeros (Seg.Zero): the closed ones, then the one being written (Open, up to its
// last whole fragment).
func (r *Recorder) Segments(stream string, from, to time.Time) ([]Seg, error) {
	if !validID(stream) {
		return nil, ErrNoStream
	}
	var out []Seg
	in := func(s Seg) bool { return !s.End.Before(from) && (to.IsZero() || s.Start.Before(to)) }
	for _, s := range r.list(stream) {
		if !in(s) {
			continue
		}
		if f, err := os.Open(filepath.Join(r.Dir, stream, s.Name)); err == nil {
			s.Zero, s.HasZero = readZero(f)
			f.Close()
		}
		out = append(out, s)
	}
	r.mu.Lock()
	for sr := range r.streams {
		if o, ok := sr.openSeg(); ok && sr.id == stream && in(o) {
			out = append(out, o)
		}
	}
	r.mu.Unlock()
	return out, nil
}

// Oldest returns the start of stream's oldest recorded video, closed or being written; with
// none, the time now: the results log keeps only what is newer.
func (r *Recorder) Oldest(stream string) time.Time {
	now := time.Now()
	if !validID(stream) {
		return now
	}
	oldest := now
	if segs := r.list(stream); len(segs) > 0 {
		oldest = segs[0].Start
	}
	parts, _ := filepath.Glob(filepath.Join(r.Dir, stream, "*"+partExt))
	for _, p := range parts {
		ms, err := strconv.ParseInt(strings.TrimSuffix(filepath.Base(p), partExt), 10, 64)
		if err == nil && time.UnixMilli(ms).Before(oldest) {
			oldest = time.UnixMilli(ms)
		}
	}
	return oldest
}

// Open opens one of stream's segments by its name: START-END.mp4 closed, START.part being
// written (its last fragment may still be partly written); both checked, nothing else reaches
// the path.
func (r *Recorder) Open(stream, name string) (*os.File, error) {
	if !validID(stream) {
		return nil, ErrNoStream
	}
	if _, _, ok := parseSegName(name); !ok && !partName(name) {
		return nil, ErrNoSegment
	}
	f, err := os.Open(filepath.Join(r.Dir, stream, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoSegment
	}
	return f, err
}

// partName reports whether name is an open segment's: START.part, START 15 digits.
func partName(name string) bool {
	ms, ok := strings.CutSuffix(name, partExt)
	if !ok || len(ms) != msWidth {
		return false
	}
	for i := 0; i < len(ms); i++ {
		if ms[i] < '0' || ms[i] > '9' {
			return false
		}
	}
	return true
}

// errStop ends fragments early without an error.
var errStop = errors.New("stop")

// fragments reads a segment box by box: head gets the boxes before the first moof (the init
// section; false stops), frag each moof with the mdat after it. Each read is bounded by
// maxFragment; a torn or oversized box ends the walk.
func fragments(f *os.File, head func([]byte) bool, frag func([]byte) error) error {
	return walkFragments(f, head, false, func(_ int64, b []byte, _ int64) error { return frag(b) })
}

// moofs is fragments handing frag only each fragment's moof box, with its offset in the file
// and the end of the mdat after it.
func moofs(f *os.File, head func([]byte) bool, frag func(at int64, moof []byte, end int64) error) error {
	return walkFragments(f, head, true, frag)
}

// walkFragments walks f's boxes for fragments and moofs.
func walkFragments(f *os.File, head func([]byte) bool, moofOnly bool, frag func(at int64, b []byte, end int64) error) error {
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	size := fi.Size()
	var hdr [8]byte
	off, moof, moofLen := int64(0), int64(-1), int64(0)
	for off+8 <= size {
		if _, err := f.ReadAt(hdr[:], off); err != nil {
			return nil
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		typ := string(hdr[4:])
		if n < 8 || off+n > size {
			return nil
		}
		switch {
		case typ == "moof" && moof < 0:
			if off > maxFragment {
				return nil
			}
			if off > 0 && head != nil {
				b := make([]byte, off)
				if _, err := f.ReadAt(b, 0); err != nil || !head(b) {
					return nil
				}
				head = nil
			}
			moof, moofLen = off, n
		case typ == "mdat" && moof >= 0:
			end := off + n
			read := end - moof
			if moofOnly {
				read = moofLen
			}
			if read > maxFragment {
				return nil
			}
			b := make([]byte, read)
			if _, err := f.ReadAt(b, moof); err != nil {
				return nil
			}
			if err := frag(moof, b, end); err != nil {
				if errors.Is(err, errStop) {
					return nil
				}
				return err
			}
			moof = -1
		}
		off += n
	}
	return nil
}

// Known reports whether stream has been recorded: a folder under Dir (kept after its stream
// stops) or a writer now.
func (r *Recorder) Known(stream string) bool {
	if !validID(stream) {
		return false
	}
	if fi, err := os.Stat(filepath.Join(r.Dir, stream)); err == nil && fi.IsDir() {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for s := range r.streams {
		if s.id == stream {
			return true
		}
	}
	return false
}
