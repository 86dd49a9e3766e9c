package reslog

import (
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/klauspost/compress/zstd"
)

// ErrNoStream is returned by Query for a stream id that cannot name a folder.
var ErrNoStream = errors.New("reslog: not a stream id")

// maxDecoded bounds one block's decompressed payload.
const maxDecoded = 64 << 20

// Query calls fn, in order, for each logged frame of stream with wall time in [from, to) (a
// zero to: no end). Frames still in memory (the last Block of a running stream) are not yet
// visible. The Frame is reused between calls; fn's error stops the query and is returned.
func (l *Log) Query(stream string, from, to time.Time, fn func(*Frame) error) error {
	if !validID(stream) {
		return ErrNoStream
	}
	cs, err := chunks(filepath.Join(l.Dir, stream))
	if err != nil {
		return err
	}
	lo, hi := from.UnixMicro(), int64(1<<63-1)
	if !to.IsZero() {
		hi = to.UnixMicro()
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxDecoded))
	if err != nil {
		return err
	}
	defer dec.Close()
	var raw []byte
	for i, c := range cs {
		if c.start >= hi || (i+1 < len(cs) && cs[i+1].start < lo) {
			continue
		}
		f, err := os.Open(c.path)
		if err != nil {
			continue // removed by retention meanwhile
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			continue
		}
		want := func(h blockHeader) bool { return h.last >= lo && h.first < hi }
		_, _, err = scan(f, fi.Size(), want, func(_ blockHeader, p []byte) error {
			raw, err = dec.DecodeAll(p, raw[:0])
			if err != nil {
				return nil // a damaged block: skipped
			}
			return decodePayload(raw, func(fr *Frame) error {
				if w := fr.Wall.UnixMicro(); w < lo || w >= hi {
					return nil
				}
				return fn(fr)
			})
		})
		f.Close()
		if err != nil && !errors.Is(err, ErrCorrupt) {
			return err
		}
	}
	return nil
}
