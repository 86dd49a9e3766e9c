package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4/seekablebuffer"
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

// maxSegmentRead bounds a segment file an export reads into memory.
const maxSegmentRead = 1 << 30

// Segments returns stream's closed segments overlapping [from, to) (zero to: no end), oldest
// first.
func (r *Recorder) Segments(stream string, from, to time.Time) ([]Seg, error) {
	if !validID(stream) {
		return nil, ErrNoStream
	}
	var out []Seg
	for _, s := range r.list(stream) {
		if s.End.Before(from) || (!to.IsZero() && !s.Start.Before(to)) {
			continue
		}
		out = append(out, s)
	}
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

// Open opens one of stream's closed segments by its name (START-END.mp4, checked: nothing
// else reaches the path).
func (r *Recorder) Open(stream, name string) (*os.File, error) {
	if !validID(stream) {
		return nil, ErrNoStream
	}
	if _, _, ok := parseSegName(name); !ok {
		return nil, ErrNoSegment
	}
	f, err := os.Open(filepath.Join(r.Dir, stream, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoSegment
	}
	return f, err
}

// Export writes the video of stream in [from, to) as one fragmented MP4, the coded video as
// recorded: the init section of the first segment, then the fragments (GOPs) overlapping the
// range, on one timeline (gaps between segments closed up). It stops before a segment whose
// codec or parameter sets differ from the first's. from and to may be at most MaxExport apart.
func (r *Recorder) Export(w io.Writer, stream string, from, to time.Time) error {
	if to.Sub(from) > MaxExport {
		return ErrTooLong
	}
	segs, err := r.Segments(stream, from, to)
	if err != nil {
		return err
	}
	var init []byte
	var offset uint64 // the timeline's end so far, in timescale ticks
	var shift uint64  // the first fragment exported starts the timeline at 0
	var seq uint32
	var scratch seekablebuffer.Buffer
	for _, s := range segs {
		b, err := readSegment(filepath.Join(r.Dir, stream, s.Name))
		if err != nil {
			continue // removed by retention meanwhile
		}
		n := initLen(b)
		if n == 0 {
			continue
		}
		if init == nil {
			init = b[:n]
			if _, err := w.Write(init); err != nil {
				return err
			}
		} else if !bytes.Equal(init, b[:n]) {
			break
		}
		var parts fmp4.Parts
		if err := parts.Unmarshal(b[n:]); err != nil {
			continue
		}
		var segEnd uint64
		for _, p := range parts {
			if len(p.Tracks) != 1 {
				continue
			}
			t := p.Tracks[0]
			var dur uint64
			for _, sm := range t.Samples {
				dur += uint64(sm.Duration)
			}
			segEnd = max(segEnd, t.BaseTime+dur)
			at := s.Start.Add(time.Duration(t.BaseTime) * time.Second / timescale)
			if !at.Add(time.Duration(dur)*time.Second/timescale).After(from) || !at.Before(to) {
				continue
			}
			if seq == 0 {
				shift = offset + t.BaseTime
			}
			seq++
			scratch.Reset()
			np := fmp4.Part{SequenceNumber: seq, Tracks: []*fmp4.PartTrack{{ID: t.ID, BaseTime: offset + t.BaseTime - shift, Samples: t.Samples}}}
			if err := np.Marshal(&scratch); err != nil {
				return err
			}
			if _, err := w.Write(scratch.Bytes()); err != nil {
				return err
			}
		}
		offset += segEnd
	}
	if init == nil || seq == 0 {
		return ErrNothing
	}
	return nil
}

func readSegment(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSegmentRead+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSegmentRead {
		return nil, fmt.Errorf("record: %s is over %d bytes", path, maxSegmentRead)
	}
	return b, nil
}

// initLen returns the length of a segment's init section (the boxes before the first moof);
// 0 when it has none.
func initLen(b []byte) int {
	off := 0
	for off+8 <= len(b) {
		n := int(binary.BigEndian.Uint32(b[off:]))
		if string(b[off+4:off+8]) == "moof" {
			return off
		}
		if n < 8 || off+n > len(b) {
			return 0
		}
		off += n
	}
	return 0
}
