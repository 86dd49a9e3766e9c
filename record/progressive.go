package record

import (
	"encoding/binary"
	"errors"
)

// errInitLayout: an init section without the boxes a progressive file copies from it.
var errInitLayout = errors.New("record: the init section lacks moov, trak, tkhd, mdhd, hdlr, vmhd, dinf or stsd (version 0)")

// sampleMeta is one sample of a progressive MP4's tables.
type sampleMeta struct {
	size uint32
	dur  uint32 // ticks to the next sample's decode time
	cto  uint32 // composition offset, ticks (ctts version 0: never negative)
	sync bool
	at   int64 // its data's offset in its segment
}

// edit is the single edit of an edit list (ISO/IEC 14496-12 §8.6.6): the presentation shows
// the media from mediaTime for dur, both in the track's ticks. A zero edit (none) is the
// identity: no edts box.
type edit struct {
	mediaTime, dur uint64
}

// box returns a box of typ holding payload (ISO/IEC 14496-12 §4.2), 32-bit size.
func box(typ string, payload ...[]byte) []byte {
	n := 8
	for _, p := range payload {
		n += len(p)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, uint32(n))
	b = append(b, typ...)
	for _, p := range payload {
		b = append(b, p...)
	}
	return b
}

// fullHead is a full box's version and flags.
func fullHead(version byte, flags uint32) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(version)<<24|flags&0xffffff)
}

// elstBox returns the edts box holding one edit (ISO/IEC 14496-12 §8.6.5, §8.6.6): version 1
// (64-bit duration and media time) when either passes 32 bits, media rate 1.
func elstBox(e edit) []byte {
	var p []byte
	if e.dur > 0xffffffff || e.mediaTime > 0x7fffffff {
		p = fullHead(1, 0)
		p = binary.BigEndian.AppendUint32(p, 1)
		p = binary.BigEndian.AppendUint64(p, e.dur)
		p = binary.BigEndian.AppendUint64(p, e.mediaTime)
	} else {
		p = fullHead(0, 0)
		p = binary.BigEndian.AppendUint32(p, 1)
		p = binary.BigEndian.AppendUint32(p, uint32(e.dur))
		p = binary.BigEndian.AppendUint32(p, uint32(e.mediaTime))
	}
	p = binary.BigEndian.AppendUint32(p, 1<<16) // media_rate_integer 1, fraction 0
	return box("edts", box("elst", p))
}

// child returns the box of the path of types inside b (a run of boxes), header included;
// nil when it is not there or a size is out of bounds.
func child(b []byte, path ...string) []byte {
	for i, typ := range path {
		found := false
		for len(b) >= 8 {
			n := int(binary.BigEndian.Uint32(b))
			if n < 8 || n > len(b) {
				return nil
			}
			if string(b[4:8]) == typ {
				if i == len(path)-1 {
					return b[:n]
				}
				b, found = b[8:n], true
				break
			}
			b = b[n:]
		}
		if !found {
			return nil
		}
	}
	return nil
}

// withDuration returns a copy of a version-0 tkhd or mdhd box with its 32-bit duration (at
// byte at) set to d.
func withDuration(b []byte, at int, d uint64) []byte {
	if len(b) < at+4 || b[8] != 0 {
		return nil
	}
	c := append([]byte(nil), b...)
	binary.BigEndian.PutUint32(c[at:], uint32(min(d, 0xffffffff)))
	return c
}

// progressiveHead returns the ftyp and moov of a progressive (non-fragmented) MP4 of one video
// track (ISO/IEC 14496-12 §8.2–§8.7): the sample entry, track header, handler and media
// header copied from init (a segment's fMP4 init section), the sample tables from samples,
// one chunk per entry of chunks (its sample count), the chunks' data starting at dataAt
// (absolute file offset) one after the other, and e's edit list when e is not zero. Times are
// in timescale ticks (the movie's too).
func progressiveHead(init []byte, samples []sampleMeta, chunks []uint32, e edit, dataAt uint64) ([]byte, error) {
	trak := child(init, "moov", "trak")
	if trak == nil {
		return nil, errInitLayout
	}
	tkhd, mdia := child(trak[8:], "tkhd"), child(trak[8:], "mdia")
	if tkhd == nil || mdia == nil {
		return nil, errInitLayout
	}
	mdhd, hdlr := child(mdia[8:], "mdhd"), child(mdia[8:], "hdlr")
	vmhd, dinf := child(mdia[8:], "minf", "vmhd"), child(mdia[8:], "minf", "dinf")
	stsd := child(mdia[8:], "minf", "stbl", "stsd")
	var total uint64
	for _, s := range samples {
		total += uint64(s.dur)
	}
	shown := total
	if e != (edit{}) {
		shown = e.dur
	}
	tkhd, mdhd = withDuration(tkhd, 28, shown), withDuration(mdhd, 24, total)
	if tkhd == nil || mdhd == nil || hdlr == nil || vmhd == nil || dinf == nil || stsd == nil {
		return nil, errInitLayout
	}
	ftyp := box("ftyp", []byte("isom"), binary.BigEndian.AppendUint32(nil, 0x200), []byte("isomiso2mp41"))

	mvhd := fullHead(0, 0)
	mvhd = binary.BigEndian.AppendUint32(mvhd, 0) // creation
	mvhd = binary.BigEndian.AppendUint32(mvhd, 0) // modification
	mvhd = binary.BigEndian.AppendUint32(mvhd, timescale)
	mvhd = binary.BigEndian.AppendUint32(mvhd, uint32(min(shown, 0xffffffff)))
	mvhd = binary.BigEndian.AppendUint32(mvhd, 1<<16) // rate 1.0
	mvhd = binary.BigEndian.AppendUint16(mvhd, 1<<8)  // volume 1.0
	mvhd = append(mvhd, make([]byte, 10)...)          // reserved
	for _, m := range []uint32{1 << 16, 0, 0, 0, 1 << 16, 0, 0, 0, 1 << 30} {
		mvhd = binary.BigEndian.AppendUint32(mvhd, m)
	}
	mvhd = append(mvhd, make([]byte, 24)...) // pre_defined
	mvhd = binary.BigEndian.AppendUint32(mvhd, 2)

	stbl := [][]byte{stsd, sttsBox(samples)}
	if c := cttsBox(samples); c != nil {
		stbl = append(stbl, c)
	}
	if s := stssBox(samples); s != nil {
		stbl = append(stbl, s)
	}
	stbl = append(stbl, stszBox(samples), stscBox(chunks), co64Box(samples, chunks, dataAt))
	trakParts := [][]byte{tkhd}
	if e != (edit{}) {
		trakParts = append(trakParts, elstBox(e))
	}
	trakParts = append(trakParts, box("mdia", mdhd, hdlr, box("minf", vmhd, dinf, box("stbl", stbl...))))
	moov := box("moov", box("mvhd", mvhd), box("trak", trakParts...))
	return append(ftyp, moov...), nil
}

// sttsBox: the decode time deltas, run-length coded (§8.6.1.2).
func sttsBox(samples []sampleMeta) []byte {
	return runs("stts", len(samples), func(i int) uint32 { return samples[i].dur })
}

// cttsBox: the composition offsets, run-length coded (§8.6.1.3, version 0); nil when all are 0.
func cttsBox(samples []sampleMeta) []byte {
	for _, s := range samples {
		if s.cto != 0 {
			return runs("ctts", len(samples), func(i int) uint32 { return samples[i].cto })
		}
	}
	return nil
}

// runs codes n values as (count, value) runs in a full box of typ.
func runs(typ string, n int, v func(int) uint32) []byte {
	var body []byte
	count := uint32(0)
	for i := 0; i < n; i++ {
		if i > 0 && v(i) == v(i-1) {
			count++
			continue
		}
		if i > 0 {
			body = binary.BigEndian.AppendUint32(body, count)
			body = binary.BigEndian.AppendUint32(body, v(i-1))
		}
		count = 1
	}
	if n > 0 {
		body = binary.BigEndian.AppendUint32(body, count)
		body = binary.BigEndian.AppendUint32(body, v(n-1))
	}
	return box(typ, fullHead(0, 0), binary.BigEndian.AppendUint32(nil, uint32(len(body)/8)), body)
}

// stssBox: the sync samples' numbers from 1 (§8.6.2); nil when every sample is one.
func stssBox(samples []sampleMeta) []byte {
	var body []byte
	for i, s := range samples {
		if s.sync {
			body = binary.BigEndian.AppendUint32(body, uint32(i+1))
		}
	}
	if len(body)/4 == len(samples) {
		return nil
	}
	return box("stss", fullHead(0, 0), binary.BigEndian.AppendUint32(nil, uint32(len(body)/4)), body)
}

// stszBox: each sample's size (§8.7.3.2).
func stszBox(samples []sampleMeta) []byte {
	body := make([]byte, 0, 8+4*len(samples))
	body = binary.BigEndian.AppendUint32(body, 0) // sizes differ
	body = binary.BigEndian.AppendUint32(body, uint32(len(samples)))
	for _, s := range samples {
		body = binary.BigEndian.AppendUint32(body, s.size)
	}
	return box("stsz", fullHead(0, 0), body)
}

// stscBox: the samples per chunk, one entry per change (§8.7.4).
func stscBox(chunks []uint32) []byte {
	var body []byte
	for i, n := range chunks {
		if i > 0 && n == chunks[i-1] {
			continue
		}
		body = binary.BigEndian.AppendUint32(body, uint32(i+1))
		body = binary.BigEndian.AppendUint32(body, n)
		body = binary.BigEndian.AppendUint32(body, 1) // sample description 1
	}
	return box("stsc", fullHead(0, 0), binary.BigEndian.AppendUint32(nil, uint32(len(body)/12)), body)
}

// co64Box: each chunk's absolute file offset, 64-bit (§8.7.5), the chunks back to back from at.
func co64Box(samples []sampleMeta, chunks []uint32, at uint64) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(len(chunks)))
	i := 0
	for _, n := range chunks {
		body = binary.BigEndian.AppendUint64(body, at)
		for range n {
			at += uint64(samples[i].size)
			i++
		}
	}
	return box("co64", fullHead(0, 0), body)
}

// mdatHeader returns the header of an mdat box of n payload bytes: 64-bit size past 4 GiB.
func mdatHeader(n uint64) []byte {
	if n+8 <= 0xffffffff {
		return append(binary.BigEndian.AppendUint32(nil, uint32(n+8)), "mdat"...)
	}
	b := append(binary.BigEndian.AppendUint32(nil, 1), "mdat"...)
	return binary.BigEndian.AppendUint64(b, n+16)
}
