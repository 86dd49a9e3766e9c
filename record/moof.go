package record

import (
	"encoding/binary"
	"errors"
)

// errMoof: a movie fragment box this reader does not take (malformed, or not one track).
var errMoof = errors.New("record: not a movie fragment of one track")

// moofSample is one sample a movie fragment describes.
type moofSample struct {
	dur, size uint32
	cto       int32 // composition offset, ticks
	sync      bool
	at        int64 // its data's offset in the file
}

// Track fragment header and run flags (ISO/IEC 14496-12 §8.8.7, §8.8.8).
const (
	tfhdBaseOffset   = 0x1
	tfhdDescription  = 0x2
	tfhdDuration     = 0x8
	tfhdSize         = 0x10
	tfhdFlags        = 0x20
	tfhdBaseIsMoof   = 0x20000
	trunDataOffset   = 0x1
	trunFirstFlags   = 0x4
	trunDuration     = 0x100
	trunSize         = 0x200
	trunFlags        = 0x400
	trunCTO          = 0x800
	sampleNotSync    = 0x10000
	maxMoofSamples   = 1 << 20
	fullBoxHeaderLen = 12
)

// parseMoof reads the one track fragment of moof (a moof box, header included, at offset off
// in its file; ISO/IEC 14496-12 §8.8.4–§8.8.12): its base decode time (tfdt) and its samples
// from its runs, each with its data's offset in the file. Fields a box leaves out take the
// track fragment header's defaults; a sample without flags anywhere counts as a sync sample.
// Errors: errMoof.
func parseMoof(moof []byte, off int64) (base uint64, samples []moofSample, err error) {
	traf := child(moof[min(8, len(moof)):], "traf")
	if len(moof) < 8 || traf == nil {
		return 0, nil, errMoof
	}
	tfhd, tfdt := child(traf[8:], "tfhd"), child(traf[8:], "tfdt")
	if len(tfhd) < fullBoxHeaderLen+4 || len(tfdt) < fullBoxHeaderLen+4 {
		return 0, nil, errMoof
	}
	if tfdt[8] == 1 {
		if len(tfdt) < fullBoxHeaderLen+8 {
			return 0, nil, errMoof
		}
		base = binary.BigEndian.Uint64(tfdt[12:])
	} else {
		base = uint64(binary.BigEndian.Uint32(tfdt[12:]))
	}
	hf := binary.BigEndian.Uint32(tfhd[8:]) & 0xffffff
	p := tfhd[16:] // after the track ID
	field := func(flag uint32, n int) (uint64, bool) {
		if hf&flag == 0 || len(p) < n {
			return 0, hf&flag == 0
		}
		var v uint64
		if n == 8 {
			v = binary.BigEndian.Uint64(p)
		} else {
			v = uint64(binary.BigEndian.Uint32(p))
		}
		p = p[n:]
		return v, true
	}
	dataAt, ok1 := field(tfhdBaseOffset, 8)
	_, ok2 := field(tfhdDescription, 4)
	defDur, ok3 := field(tfhdDuration, 4)
	defSize, ok4 := field(tfhdSize, 4)
	defFlags, ok5 := field(tfhdFlags, 4)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return 0, nil, errMoof
	}
	next := off // where a run without a data offset starts
	if hf&tfhdBaseOffset != 0 {
		next = int64(dataAt)
	}
	runBase := next
	// the runs, in order
	for b := traf[8:]; len(b) >= 8; {
		n := int(binary.BigEndian.Uint32(b))
		if n < 8 || n > len(b) {
			return 0, nil, errMoof
		}
		if string(b[4:8]) == "trun" {
			var err error
			if samples, next, err = readTrun(b[:n], samples, runBase, next, hf, uint32(defDur), uint32(defSize), uint32(defFlags)); err != nil {
				return 0, nil, err
			}
		}
		b = b[n:]
	}
	if len(samples) == 0 {
		return 0, nil, errMoof
	}
	return base, samples, nil
}

// readTrun appends the samples of one run (§8.8.8) to samples: a data offset counts from
// runBase, without one the run starts at next; it returns where the run's data ends.
func readTrun(trun []byte, samples []moofSample, runBase, next int64, hf, defDur, defSize, defFlags uint32) ([]moofSample, int64, error) {
	if len(trun) < fullBoxHeaderLen+4 {
		return nil, 0, errMoof
	}
	version := trun[8]
	tf := binary.BigEndian.Uint32(trun[8:]) & 0xffffff
	count := int(binary.BigEndian.Uint32(trun[12:]))
	p := trun[16:]
	u32 := func() uint32 {
		v := binary.BigEndian.Uint32(p)
		p = p[4:]
		return v
	}
	need := 0
	for _, f := range []uint32{trunDataOffset, trunFirstFlags} {
		if tf&f != 0 {
			need += 4
		}
	}
	per := 0
	for _, f := range []uint32{trunDuration, trunSize, trunFlags, trunCTO} {
		if tf&f != 0 {
			per += 4
		}
	}
	if count > maxMoofSamples || count+len(samples) > maxMoofSamples || len(p) < need+per*count {
		return nil, 0, errMoof
	}
	at := next
	if tf&trunDataOffset != 0 {
		at = runBase + int64(int32(u32()))
	}
	first, hasFirst := uint32(0), tf&trunFirstFlags != 0
	if hasFirst {
		first = u32()
	}
	for i := range count {
		s := moofSample{dur: defDur, size: defSize, at: at}
		flags := defFlags
		if i == 0 && hasFirst {
			flags = first
		}
		if tf&trunDuration != 0 {
			s.dur = u32()
		}
		if tf&trunSize != 0 {
			s.size = u32()
		}
		if tf&trunFlags != 0 {
			flags = u32()
		}
		if tf&trunCTO != 0 {
			v := u32()
			if version == 0 && v > 0x7fffffff { // unsigned in version 0: beyond int32, not ours
				return nil, 0, errMoof
			}
			s.cto = int32(v)
		}
		if hf&tfhdDuration == 0 && tf&trunDuration == 0 || hf&tfhdSize == 0 && tf&trunSize == 0 {
			return nil, 0, errMoof // the defaults are the movie's (trex): not ours
		}
		s.sync = flags&sampleNotSync == 0
		samples = append(samples, s)
		at += int64(s.size)
	}
	return samples, at, nil
}
