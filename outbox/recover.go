package outbox

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// lock takes an exclusive flock on Dir/LOCK.
func (o *Outbox) lock() error {
	f, err := os.OpenFile(filepath.Join(o.Dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("%w: %s: %v", ErrLocked, o.Dir, err)
	}
	o.lockFile = f
	return nil
}

// recover opens the segments, cutting torn or corrupt tails, and loads the cursors.
func (o *Outbox) recover() error {
	entries, err := os.ReadDir(o.Dir)
	if err != nil {
		return err
	}
	var bases []uint64
	var maxCursor uint64
	dirty := false
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(o.Dir, name)
		switch {
		case strings.HasSuffix(name, tmpExt):
			os.Remove(path)
		case strings.HasSuffix(name, segExt):
			if base, ok := parseSegName(name); ok {
				bases = append(bases, base)
			}
		case strings.HasSuffix(name, cursorExt):
			cname := strings.TrimSuffix(name, cursorExt)
			if !validName(cname) {
				continue
			}
			seq, err := readCursor(path)
			if errors.Is(err, ErrCorrupt) {
				// Start over: every retained record is delivered again.
				o.Logger.Error("outbox: corrupt cursor file, consumer restarts from the oldest record",
					"file", path)
				seq, err = 0, nil
			}
			if err != nil {
				return err
			}
			o.consumers[cname] = &Consumer{o: o, name: cname, acked: seq, persisted: seq}
			maxCursor = max(maxCursor, seq)
		}
	}
	slices.Sort(bases)
	for _, base := range bases {
		s, cut, err := o.openSegment(base)
		if err != nil {
			return err
		}
		dirty = dirty || cut
		if s == nil {
			continue
		}
		if n := len(o.segs); n > 0 && s.base <= o.segs[n-1].last {
			o.Logger.Error("outbox: segment overlaps the previous one, removed", "file", s.path)
			s.f.Close()
			os.Remove(s.path)
			dirty = true
			continue
		}
		o.segs = append(o.segs, s)
		o.bytes += s.size
	}
	if dirty && o.Fsync != FsyncNever {
		if err := syncDir(o.Dir); err != nil {
			return err
		}
	}
	o.nextSeq = maxCursor + 1
	if n := len(o.segs); n > 0 {
		o.nextSeq = max(o.nextSeq, o.segs[n-1].last+1)
	}
	o.written = o.nextSeq - 1
	o.synced.Store(o.written)
	return nil
}

// openSegment opens and scans a segment, cutting it after its valid prefix. It returns nil
// (the file removed) when nothing valid is left, and whether the directory changed.
func (o *Outbox) openSegment(base uint64) (*segment, bool, error) {
	path := filepath.Join(o.Dir, segName(base))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, false, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, err
	}
	s := &segment{path: path, f: f, base: base, sealed: true}
	serr := s.scan(io.NewSectionReader(f, 0, fi.Size()), fi.Size(), MaxRecordLimit)
	if serr != nil && !errors.Is(serr, errTorn) && !errors.Is(serr, ErrCorrupt) {
		f.Close()
		return nil, false, serr
	}
	if serr != nil {
		o.stats.Truncations++
		o.stats.TruncatedBytes += fi.Size() - s.size
		o.Logger.Warn("outbox: segment cut after its last valid record", "file", path,
			"reason", serr, "kept", s.size, "cut", fi.Size()-s.size, "last_seq", s.last)
	}
	if s.count() == 0 {
		f.Close()
		return nil, true, os.Remove(path)
	}
	if serr != nil {
		if err := f.Truncate(s.size); err != nil {
			f.Close()
			return nil, false, err
		}
		if o.Fsync != FsyncNever {
			if err := f.Sync(); err != nil {
				f.Close()
				return nil, false, err
			}
		}
	}
	return s, false, nil
}
