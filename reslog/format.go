package reslog

import (
	"encoding/binary"
	"errors"
	"math"
	"time"
)

// Frame is one inferred frame's tracked objects.
type Frame struct {
	// Frame is the frame's index in the stream (decoded frames, from 0).
	Frame int64
	// PTS is its presentation time since the start of the stream (µs precision).
	PTS time.Duration
	// Wall is its capture time when the source knows it, else when it was logged (µs).
	Wall time.Time
	// Width and Height of the frame in pixels (the boxes' space).
	Width, Height int
	// Objects are the frame's detections.
	Objects []Object
}

// Object is one detection of a Frame.
type Object struct {
	// TrackID is the tracker's id (0: untracked).
	TrackID int64
	// ClassID and Label are the class index and name.
	ClassID int
	Label   string
	// Score is the confidence, kept to 1/10,000.
	Score float32
	// Box is [x1,y1,x2,y2] in frame pixels, kept to a tenth of a pixel.
	Box [4]float32
	// Zones names the zones the track is in (from its zone.enter and zone.leave events).
	Zones []string
}

// ErrCorrupt is returned for a block whose payload does not decode.
var ErrCorrupt = errors.New("reslog: corrupt block")

// Quantization: boxes in tenths of a pixel, scores in ten-thousandths, times in µs (the
// precision of the JSON results, so an export matches them exactly).
const (
	boxScale   = 10
	scoreScale = 10000
)

func qBox(v float32) int64   { return q(v, boxScale) }
func qScore(v float32) int64 { return q(v, scoreScale) }

// q rounds v×scale half to even (exact for a float32: the product fits a float64), as the
// JSON results format v; NaN and ±Inf become 0, beyond ±2^52 clamped.
func q(v float32, scale float64) int64 {
	x := math.RoundToEven(float64(v) * scale)
	if x-x != 0 {
		return 0
	}
	return int64(min(max(x, -1<<52), 1<<52))
}

// encoder builds one block's payload: a string table (labels and zone names) then the frames,
// each field a varint, deltas against the previous frame and each track's previous box.
type encoder struct {
	buf     []byte
	strs    []string
	strIdx  map[string]uint64
	prevBox map[int64][4]int64
	n       int   // frames
	pf, pp  int64 // previous frame index, PTS µs
	pw      int64 // previous wall µs
	first   int64 // first frame's wall µs
	last    int64 // last frame's wall µs
}

func newEncoder() *encoder {
	return &encoder{strIdx: map[string]uint64{}, prevBox: map[int64][4]int64{}}
}

func (e *encoder) reset() {
	e.buf, e.strs = e.buf[:0], e.strs[:0]
	clear(e.strIdx)
	clear(e.prevBox)
	e.n, e.pf, e.pp, e.pw = 0, 0, 0, 0
}

func (e *encoder) str(s string) uint64 {
	i, ok := e.strIdx[s]
	if !ok {
		i = uint64(len(e.strs))
		e.strs = append(e.strs, s)
		e.strIdx[s] = i
	}
	return i
}

// add appends f, with wall time w in Unix µs.
func (e *encoder) add(f *Frame) {
	w := f.Wall.UnixMicro()
	if e.n == 0 {
		e.first = w
	}
	e.last = w
	b := e.buf
	pts := f.PTS.Microseconds()
	b = binary.AppendVarint(b, f.Frame-e.pf)
	b = binary.AppendVarint(b, pts-e.pp)
	b = binary.AppendVarint(b, w-e.pw)
	e.pf, e.pp, e.pw = f.Frame, pts, w
	b = binary.AppendUvarint(b, uint64(f.Width))
	b = binary.AppendUvarint(b, uint64(f.Height))
	b = binary.AppendUvarint(b, uint64(len(f.Objects)))
	var pt int64
	for i := range f.Objects {
		o := &f.Objects[i]
		b = binary.AppendVarint(b, o.TrackID-pt)
		pt = o.TrackID
		b = binary.AppendUvarint(b, uint64(o.ClassID))
		b = binary.AppendUvarint(b, e.str(o.Label))
		b = binary.AppendVarint(b, qScore(o.Score))
		var q, base [4]int64
		if o.TrackID != 0 {
			base = e.prevBox[o.TrackID]
		}
		for k, v := range o.Box {
			q[k] = qBox(v)
			b = binary.AppendVarint(b, q[k]-base[k])
		}
		if o.TrackID != 0 {
			e.prevBox[o.TrackID] = q
		}
		b = binary.AppendUvarint(b, uint64(len(o.Zones)))
		for _, z := range o.Zones {
			b = binary.AppendUvarint(b, e.str(z))
		}
	}
	e.buf = b
	e.n++
}

// payload appends the block's payload (string table, frame count, frames) to dst.
func (e *encoder) payload(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(e.strs)))
	for _, s := range e.strs {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	dst = binary.AppendUvarint(dst, uint64(e.n))
	return append(dst, e.buf...)
}

// Bounds on a decoded payload, against a corrupt or hostile file.
const (
	maxStrings = 1 << 16
	maxStrLen  = 1 << 10
	maxObjects = 1 << 16
)

// decodePayload calls fn for each frame of a block's payload; Frames and their Objects are
// reused between calls (copy what is kept).
func decodePayload(p []byte, fn func(*Frame) error) error {
	r := reader{b: p}
	ns := r.uvarint()
	if ns > maxStrings {
		return ErrCorrupt
	}
	strs := make([]string, 0, ns)
	for range ns {
		l := r.uvarint()
		if l > maxStrLen || l > uint64(len(r.b)) {
			return ErrCorrupt
		}
		strs = append(strs, string(r.b[:l]))
		r.b = r.b[l:]
	}
	str := func(i uint64) string {
		if i >= uint64(len(strs)) {
			r.err = true
			return ""
		}
		return strs[i]
	}
	n := r.uvarint()
	prevBox := map[int64][4]int64{}
	var f Frame
	var pf, pp, pw int64
	for range n {
		if r.err {
			return ErrCorrupt
		}
		pf += r.varint()
		pp += r.varint()
		pw += r.varint()
		f.Frame, f.PTS, f.Wall = pf, time.Duration(pp)*time.Microsecond, time.UnixMicro(pw)
		f.Width, f.Height = int(r.uvarint()), int(r.uvarint())
		no := r.uvarint()
		if no > maxObjects {
			return ErrCorrupt
		}
		f.Objects = f.Objects[:0]
		var pt int64
		for range no {
			var o Object
			pt += r.varint()
			o.TrackID = pt
			o.ClassID = int(r.uvarint())
			o.Label = str(r.uvarint())
			o.Score = float32(float64(r.varint()) / scoreScale)
			var base, q [4]int64
			if o.TrackID != 0 {
				base = prevBox[o.TrackID]
			}
			for k := range q {
				q[k] = base[k] + r.varint()
				o.Box[k] = float32(float64(q[k]) / boxScale)
			}
			if o.TrackID != 0 {
				prevBox[o.TrackID] = q
			}
			nz := r.uvarint()
			if nz > maxStrings {
				return ErrCorrupt
			}
			for range nz {
				o.Zones = append(o.Zones, str(r.uvarint()))
			}
			if r.err {
				return ErrCorrupt
			}
			f.Objects = append(f.Objects, o)
		}
		if r.err {
			return ErrCorrupt
		}
		if err := fn(&f); err != nil {
			return err
		}
	}
	if r.err {
		return ErrCorrupt
	}
	return nil
}

// reader reads varints, remembering the first failure.
type reader struct {
	b   []byte
	err bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}
