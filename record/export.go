package record

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/fmp4"
)

// maxExportSamples bounds the frames one export holds (its sample tables are kept in memory,
// 16 bytes a frame): an hour at 291 fps.
const maxExportSamples = 1 << 20

// wallSlack: segment names, and so the frames' wall times, are to the millisecond (truncated):
// a frame within a millisecond of from or to counts as the frame there.
const wallSlack = time.Millisecond

// Sizer is what an export's writer may also be: told the export's size in bytes before the
// first write (an HTTP answer's Content-Length).
type Sizer interface{ SetSize(n int64) }

// errChanged: a fragment read for the second time differs from the first reading.
var errChanged = errors.New("record: a segment changed while it was exported")

// Export writes the video of stream presented in [from, to) as one MP4 (progressive: ftyp,
// moov, the zero box, mdat), the coded video as recorded, not re-encoded: the samples from the
// key frame at or before from (needed to decode) to the last frame presented before to, in
// decode order, on one timeline (gaps between segments closed up). An edit list (ISO/IEC
// 14496-12 §8.6.6) presents from the frame at from up to the frame at or after to, so players
// that honour it (FFmpeg, Chromium) show exactly the range; the earlier frames of the first
// GOP stay in the file, decoded but not shown. Without a frame to skip and with the first
// frame at media time 0 (a range from a key frame, no B-frames) there is no edit list. A
// frame's time is its segment's start (its key frame's wall time) plus its presentation time
// after the key frame's, to the millisecond. The zero box holds the source PTS of
// presentation time 0. It stops before a segment whose codec or parameter sets differ from
// the first's. A writer that is a Sizer learns the size first. Errors: ErrTooLong (to-from over MaxExport, or more than 2^20 frames),
// ErrNothing (no frame in the range, or an empty range), ErrNoStream.
func (r *Recorder) Export(w io.Writer, stream string, from, to time.Time) error {
	if to.Sub(from) > MaxExport {
		return ErrTooLong
	}
	if !from.Before(to) {
		return ErrNothing
	}
	segs, err := r.Segments(stream, from, to)
	if err != nil {
		return err
	}
	p := &exportPlan{from: from, to: to}
	defer p.close()
	for _, s := range segs {
		if err := p.segment(filepath.Join(r.Dir, stream, s.Name), s.Start); err != nil {
			return err
		}
		if p.done {
			break
		}
	}
	return p.write(w)
}

// exportFrag is a fragment an export takes the first keep samples of.
type exportFrag struct {
	f    *os.File
	at   int64 // the moof's offset
	n    int   // moof and mdat, bytes
	keep int
}

// exportPlan gathers an export's samples (the first pass over the fragments).
type exportPlan struct {
	from, to time.Time
	init     []byte // the first exported segment's init section, without its zero box
	files    []*os.File
	frags    []exportFrag
	samples  []sampleMeta
	chunks   []uint32 // samples of each fragment taken
	bytes    uint64
	out      uint64 // the timeline's end so far, ticks
	shown    bool   // a frame in the range is taken
	start    uint64 // its earliest presentation time on the timeline, ticks
	end      uint64 // the end of the latest one's (its PTS plus its duration)
	cap      uint64 // the earliest presentation time of a frame at or past to (capped: seen)
	maxPTS   uint64 // the latest presentation time taken
	frameDur uint32 // the last duration taken that was a step between two DTS: a frame's
	capped   bool
	skipped  bool // a frame taken is outside the range
	zero     time.Duration
	hasZero  bool
	done     bool // a frame at or past to was seen, or a segment differs: nothing later is taken
}

func (p *exportPlan) close() {
	for _, f := range p.files {
		f.Close()
	}
}

// segment takes the fragments of the segment at path (starting at wall time start) that
// present frames in the range. The segment's file stays open for the second pass (retention
// may remove it meanwhile).
func (p *exportPlan) segment(path string, start time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // removed by retention meanwhile
	}
	var head []byte
	var segZero time.Duration
	var hasZero, haveKey bool
	var keyCTO int64 // the segment's first sample's composition offset: its start's
	used := false
	err = fragmentsAt(f, func(h []byte) bool {
		segZero, hasZero = headZero(h)
		head = append([]byte(nil), stripZero(h)...)
		return true
	}, func(at int64, frag []byte) error {
		var parts fmp4.Parts
		if err := parts.Unmarshal(frag); err != nil || len(parts) != 1 || len(parts[0].Tracks) != 1 || len(parts[0].Tracks[0].Samples) == 0 {
			return nil // a fragment not of ours: skipped
		}
		t := parts[0].Tracks[0]
		if !haveKey {
			keyCTO, haveKey = int64(t.Samples[0].PTSOffset), true
		}
		// each sample's wall time and decode time in the segment
		walls := make([]time.Time, len(t.Samples))
		dts := make([]uint64, len(t.Samples))
		last, in := -1, false // the last sample before to (decode order); any in the range
		first := time.Time{}
		d := t.BaseTime
		for i, sm := range t.Samples {
			dts[i] = d
			walls[i] = start.Add(tickSigned(int64(d)+int64(sm.PTSOffset)-keyCTO) + wallSlack)
			if walls[i].Before(p.to) {
				last = i
				in = in || !walls[i].Before(p.from)
			}
			if i == 0 || walls[i].Before(first) {
				first = walls[i]
			}
			d += uint64(sm.Duration)
		}
		if len(p.frags) > 0 && !bytes.Equal(p.init, head) {
			p.done = true // another codec or other parameter sets: a file of its own
			return errStop
		}
		if len(p.frags) > 0 && !used {
			p.join(keyCTO)
		}
		if len(p.frags) > 0 || in { // the first frame at or past to ends the last one shown
			for j, sm := range t.Samples {
				if !walls[j].Before(p.to) {
					pts := p.out + dts[j] - t.BaseTime + uint64(max(sm.PTSOffset, 0))
					if !p.capped || pts < p.cap {
						p.cap, p.capped = pts, true
					}
				}
			}
		}
		if !first.Before(p.to) {
			p.done = true
			return errStop
		}
		if !in && len(p.frags) == 0 {
			return nil // before the range
		}
		if len(p.frags) == 0 {
			p.init = head
		}
		for i := 0; i <= last; i++ {
			sm := t.Samples[i]
			m := sampleMeta{size: uint32(len(sm.Payload)), dur: sm.Duration, cto: uint32(max(sm.PTSOffset, 0)), sync: !sm.IsNonSyncSample}
			pts := p.out + uint64(m.cto)
			if !walls[i].Before(p.from) && walls[i].Before(p.to) {
				if !p.shown || pts < p.start {
					p.start = pts
					p.zero, p.hasZero = segZero+tickSigned(int64(dts[i])+int64(m.cto)), hasZero
				}
				p.shown = true
				p.end = max(p.end, pts+uint64(m.dur))
			} else {
				p.skipped = true
			}
			p.maxPTS = max(p.maxPTS, pts)
			if i < len(t.Samples)-1 { // a DTS step; a fragment's last may be a guess
				p.frameDur = m.dur
			}
			p.out += uint64(m.dur)
			p.bytes += uint64(m.size)
			p.samples = append(p.samples, m)
		}
		if len(p.samples) > maxExportSamples {
			return ErrTooLong
		}
		p.chunks = append(p.chunks, uint32(last+1))
		p.frags = append(p.frags, exportFrag{f: f, at: at, n: len(frag), keep: last + 1})
		used = true
		if last < len(t.Samples)-1 {
			p.skipped = true // frames past to, decoded before the last one shown
			p.done = true
			return errStop
		}
		return nil
	})
	if used {
		p.files = append(p.files, f)
	} else {
		f.Close()
	}
	return err
}

// join lengthens the last sample taken so that the next segment's first frame, of composition
// offset keyCTO, is presented a frame after the latest presented so far: a segment that ended
// at a gap or a PTS going back gave its last sample a guessed duration (one tick, or 1/25 s),
// which would present the next segment's first frames among, or too close to, this one's last.
func (p *exportPlan) join(keyCTO int64) {
	next := p.out + uint64(max(keyCTO, 0))
	if want := p.maxPTS + uint64(p.frameDur); next < want && len(p.samples) > 0 {
		p.samples[len(p.samples)-1].dur += uint32(want - next)
		p.out += want - next
	}
}

// write writes the MP4: the head from the plan, then the samples read a second time.
func (p *exportPlan) write(w io.Writer) error {
	if !p.shown {
		return ErrNothing
	}
	if p.capped && p.cap > p.start && p.cap < p.end {
		p.end = p.cap // the next frame's time, not a duration off by a tick's rounding
	}
	var e edit
	if p.skipped || p.start != 0 || p.end != p.out {
		e = edit{mediaTime: p.start, dur: p.end - p.start}
	}
	var zero []byte
	if p.hasZero {
		zero = zeroBox(p.zero)
	}
	hdr := mdatHeader(p.bytes)
	head, err := progressiveHead(p.init, p.samples, p.chunks, e, 0)
	if err != nil {
		return err
	}
	if head, err = progressiveHead(p.init, p.samples, p.chunks, e, uint64(len(head)+len(zero)+len(hdr))); err != nil {
		return err
	}
	if sz, ok := w.(Sizer); ok {
		sz.SetSize(int64(len(head)+len(zero)+len(hdr)) + int64(p.bytes))
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	for _, b := range [][]byte{head, zero, hdr} {
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	i := 0
	for _, fr := range p.frags {
		b := make([]byte, fr.n)
		if _, err := fr.f.ReadAt(b, fr.at); err != nil {
			return errChanged
		}
		var parts fmp4.Parts
		if err := parts.Unmarshal(b); err != nil || len(parts) != 1 || len(parts[0].Tracks) != 1 || len(parts[0].Tracks[0].Samples) < fr.keep {
			return errChanged
		}
		for _, sm := range parts[0].Tracks[0].Samples[:fr.keep] {
			if uint32(len(sm.Payload)) != p.samples[i].size {
				return errChanged
			}
			if _, err := bw.Write(sm.Payload); err != nil {
				return err
			}
			i++
		}
	}
	return bw.Flush()
}

// tickSigned is t ticks as a duration, negative ones too.
func tickSigned(t int64) time.Duration { return time.Duration(t) * time.Second / timescale }
