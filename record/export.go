package record

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// maxExportSamples bounds the frames one export holds (its sample tables are kept in memory,
// 32 bytes a frame, 16 MiB at most): an hour at 145 fps.
const maxExportSamples = 1 << 19

// wallSlack: segment names, and so the frames' wall times, are to the millisecond (truncated):
// a frame within a millisecond of from or to counts as the frame there.
const wallSlack = time.Millisecond

// Sizer is what an export's writer may also be: told the export's size in bytes before the
// first write (an HTTP answer's Content-Length).
type Sizer interface{ SetSize(n int64) }

// leadMargin: a segment starting this long after an export's end is read too, for its first
// GOP's leading frames (an open GOP's, presented before its key frame: before the segment's
// start).
const leadMargin = 10 * time.Second

// errChanged: a segment's data is no longer where its fragment said.
var errChanged = errors.New("record: a segment changed while it was exported")

// Export writes the video of stream presented in [from, to) as one MP4 (progressive: ftyp,
// moov, the zero box, mdat), the coded video as recorded, not re-encoded: the samples from the
// key frame at or before from (needed to decode; for a leading frame of an open GOP, the GOP
// before's) to the last frame presented before to, in decode order, on one timeline (gaps
// between segments closed up). An edit list (ISO/IEC 14496-12 §8.6.6) presents from the frame
// at from up to the frame at or after to, so players that honour it (FFmpeg, Chromium) show
// exactly the range; the earlier frames of the first GOP stay in the file, decoded but not
// shown. Without a frame to skip and with the first frame at media time 0 (a range from a key
// frame, no B-frames) there is no edit list. A frame's time is its segment's start (its key
// frame's wall time) plus its presentation time after the key frame's, to the millisecond.
// The zero box holds the source PTS of presentation time 0. It stops before a segment whose
// codec or parameter sets differ from the first's. A writer that is a Sizer learns the size
// first. Errors: ErrTooLong (to-from over MaxExport, or more than 2^19 frames), ErrNothing (no
// frame in the range, or an empty range), ErrNoStream.
func (r *Recorder) Export(w io.Writer, stream string, from, to time.Time) error {
	if to.Sub(from) > MaxExport {
		return ErrTooLong
	}
	if !from.Before(to) {
		return ErrNothing
	}
	segs, err := r.Segments(stream, from, to.Add(leadMargin))
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
	p.takeHeld()
	return p.write(w)
}

// seenFrag is a fragment the first pass has read: its moof's samples and their wall times.
type seenFrag struct {
	f       *os.File
	head    []byte // its segment's init section, without the zero box
	segZero time.Duration
	hasZero bool
	base    uint64 // its first sample's decode time in its segment, ticks
	samples []moofSample
	walls   []time.Time // each sample's wall time (presentation)
	after   bool        // every frame at or past to: only its times count
}

// exportFrag is a fragment an export takes the first keep samples of.
type exportFrag struct {
	f    *os.File
	keep int
}

// exportPlan gathers an export's samples (the first pass over the fragments).
type exportPlan struct {
	from, to time.Time
	files    []*os.File
	held     []seenFrag // from the last fragment whose key frame is at or before from
	heldN    int        // their samples
	done     bool       // a frame at or past to was seen, or a segment differs: nothing later is read

	init     []byte // the first exported segment's init section, without its zero box
	last     *os.File
	frags    []exportFrag
	samples  []sampleMeta
	chunks   []uint32 // samples of each fragment taken
	bytes    uint64
	out      uint64 // the timeline's end so far, ticks
	shown    bool   // a frame in the range is taken
	start    uint64 // its earliest presentation time on the timeline, ticks
	end      uint64 // the end of the latest one's (its PTS plus its duration)
	cap      uint64 // the earliest presentation time of a frame at or past to (capped: seen)
	capped   bool
	maxPTS   uint64 // the latest presentation time taken
	frameDur uint32 // the last duration taken that was a step between two DTS: a frame's
	skipped  bool   // a frame taken is outside the range
	zero     time.Duration
	hasZero  bool
}

func (p *exportPlan) close() {
	for _, f := range p.files {
		f.Close()
	}
}

// segment reads the moofs of the segment at path (starting at wall time start) and holds the
// fragments from the last one whose key frame is at or before from (a decoder needs it, and
// an open GOP's leading frames need the GOP before) to the first whose every frame is at or
// past to. The segment's file stays open for the second pass (retention may remove it
// meanwhile).
func (p *exportPlan) segment(path string, start time.Time) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // removed by retention meanwhile
	}
	p.files = append(p.files, f)
	var head []byte
	var segZero time.Duration
	var hasZero, haveKey bool
	var keyCTO int64 // the segment's first sample's composition offset: its start's
	return moofs(f, func(h []byte) bool {
		segZero, hasZero = headZero(h)
		head = append([]byte(nil), stripZero(h)...)
		return true
	}, func(at int64, moof []byte, end int64) error {
		base, samples, err := parseMoof(moof, at)
		if err != nil {
			return nil // a fragment not of ours: skipped
		}
		for _, sm := range samples {
			if sm.at < at+int64(len(moof)) || sm.at+int64(sm.size) > end {
				return nil // data outside its mdat: skipped
			}
		}
		if !haveKey {
			keyCTO, haveKey = int64(samples[0].cto), true
		}
		fr := seenFrag{f: f, head: head, segZero: segZero, hasZero: hasZero, base: base, samples: samples,
			walls: make([]time.Time, len(samples))}
		first, inOrAfter := time.Time{}, false
		d := base
		for i, sm := range samples {
			fr.walls[i] = start.Add(tickSigned(int64(d)+int64(sm.cto)-keyCTO) + wallSlack)
			if i == 0 || fr.walls[i].Before(first) {
				first = fr.walls[i]
			}
			inOrAfter = inOrAfter || !fr.walls[i].Before(p.from)
			d += uint64(sm.dur)
		}
		if len(p.held) > 0 && !bytes.Equal(p.held[0].head, head) {
			if p.inRange() {
				p.done = true // another codec or other parameter sets: a file of its own
				return errStop
			}
			p.held, p.heldN = nil, 0 // what was held is of no use to this
		}
		switch {
		case !first.Before(p.to):
			if len(p.held) > 0 {
				fr.after = true
				p.held = append(p.held, fr)
			}
			p.done = true
			return errStop
		case !fr.walls[0].After(p.from): // its key frame at or before from: a new start
			p.held, p.heldN = append(p.held[:0], fr), 0
		case len(p.held) > 0 || inOrAfter:
			p.held = append(p.held, fr)
		default:
			return nil
		}
		if p.heldN += len(samples); p.heldN > maxExportSamples {
			return ErrTooLong
		}
		return nil
	})
}

// inRange reports whether a fragment held has a frame at or after from.
func (p *exportPlan) inRange() bool {
	return slices.ContainsFunc(p.held, p.reaches)
}

// reaches reports whether fr has a frame at or after from.
func (p *exportPlan) reaches(fr seenFrag) bool {
	return slices.ContainsFunc(fr.walls, func(w time.Time) bool { return !w.Before(p.from) })
}

// leads reports whether fr has leading frames: decoded after its key frame, presented before.
func leads(fr seenFrag) bool {
	return slices.ContainsFunc(fr.walls, func(w time.Time) bool { return w.Before(fr.walls[0]) })
}

// takeHeld takes the fragments held, less a first one of no use: one without a frame at or
// after from, before a fragment without leading frames.
func (p *exportPlan) takeHeld() {
	held := p.held
	for len(held) >= 2 && !p.reaches(held[0]) && !leads(held[1]) {
		held = held[1:]
	}
	for _, fr := range held {
		if !p.take(fr) {
			break
		}
	}
}

// take takes the samples of fr up to the last presented before to, in decode order, and notes
// its frames' times; false when nothing later is to be taken.
func (p *exportPlan) take(fr seenFrag) bool {
	if p.last != nil && fr.f != p.last {
		p.join(fr)
	}
	dts := uint64(0)                // from the fragment's start
	for j, sm := range fr.samples { // the first frame at or past to ends the last one shown
		if pts := p.out + dts + uint64(max(sm.cto, 0)); !fr.walls[j].Before(p.to) && (!p.capped || pts < p.cap) {
			p.cap, p.capped = pts, true
		}
		dts += uint64(sm.dur)
	}
	if fr.after {
		return false
	}
	last := -1 // the last sample before to, in decode order
	for i, w := range fr.walls {
		if w.Before(p.to) {
			last = i
		}
	}
	if len(p.frags) == 0 {
		p.init = fr.head
	}
	dts = fr.base
	for i := 0; i <= last; i++ {
		sm := fr.samples[i]
		m := sampleMeta{size: sm.size, dur: sm.dur, cto: uint32(max(sm.cto, 0)), sync: sm.sync, at: sm.at}
		pts := p.out + uint64(m.cto)
		if w := fr.walls[i]; !w.Before(p.from) && w.Before(p.to) {
			if !p.shown || pts < p.start {
				p.start = pts
				p.zero, p.hasZero = fr.segZero+tickSigned(int64(dts)+int64(m.cto)), fr.hasZero
			}
			p.shown = true
			p.end = max(p.end, pts+uint64(m.dur))
		} else {
			p.skipped = true
		}
		p.maxPTS = max(p.maxPTS, pts)
		if i < len(fr.samples)-1 { // a DTS step; a fragment's last may be a guess
			p.frameDur = m.dur
		}
		p.out += uint64(m.dur)
		p.bytes += uint64(m.size)
		p.samples = append(p.samples, m)
		dts += uint64(m.dur)
	}
	if last < 0 {
		return false
	}
	p.chunks = append(p.chunks, uint32(last+1))
	p.frags = append(p.frags, exportFrag{f: fr.f, keep: last + 1})
	p.last = fr.f
	if last < len(fr.samples)-1 {
		p.skipped = true // frames past to, decoded before the last one shown
		return false
	}
	return true
}

// join lengthens the last sample taken so that fr, the first fragment of the next segment, is
// presented from a frame after the latest presented so far: a segment that ended at a gap or
// a PTS going back gave its last sample a guessed duration (one tick, or 1/25 s), which would
// present the next segment's first frames among, or too close to, this one's last.
func (p *exportPlan) join(fr seenFrag) {
	earliest, d := uint64(0), uint64(0)
	for i, sm := range fr.samples {
		if t := d + uint64(max(sm.cto, 0)); i == 0 || t < earliest {
			earliest = t
		}
		d += uint64(sm.dur)
	}
	next := p.out + earliest
	if want := p.maxPTS + uint64(p.frameDur); next < want && len(p.samples) > 0 {
		p.samples[len(p.samples)-1].dur += uint32(want - next)
		p.out += want - next
	}
}

// write writes the MP4: the head from the plan, then the samples' data from the segments.
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
		// the samples' data, runs of adjacent ones copied at once
		for j := 0; j < fr.keep; {
			at, n := p.samples[i].at, int64(p.samples[i].size)
			for j, i = j+1, i+1; j < fr.keep && p.samples[i].at == at+n; j, i = j+1, i+1 {
				n += int64(p.samples[i].size)
			}
			if c, err := io.Copy(bw, io.NewSectionReader(fr.f, at, n)); err != nil || c != n {
				if err == nil || errors.Is(err, io.EOF) {
					err = errChanged
				}
				return err
			}
		}
	}
	return bw.Flush()
}

// tickSigned is t ticks as a duration, negative ones too.
func tickSigned(t int64) time.Duration { return time.Duration(t) * time.Second / timescale }
