package h26x

import (
	"bytes"

	"github.com/vinfer/vinfer/media"
)

var (
	startCode = []byte{0, 0, 0, 1}
	needH264  = []Kind{KindSPS, KindPPS}
	needH265  = []Kind{KindVPS, KindSPS, KindPPS}
)

// Builder assembles the NAL units of one access unit into Annex-B with 4-byte start codes. It
// remembers the last VPS/SPS/PPS seen (in-band or given by SetParamSet from the SDP) and inserts
// the missing ones before the first VCL NAL unit of a key frame, where FFmpeg's
// h264_mp4toannexb and hevc_mp4toannexb put them. Buffers are reused: after warm-up a Builder
// does not allocate. The zero value is not ready: set Codec.
type Builder struct {
	// Codec is H.264 or H.265.
	Codec media.Codec

	buf      []byte
	out      []byte
	nalus    [][]byte
	firstVCL int     // offset of the first VCL NAL unit's start code in buf, -1 if none
	has      [4]bool // parameter sets present in this access unit, by Kind
	at       [4]int  // offset of the first of each present in buf, by Kind
	key      bool
	vcl      bool
	ps       [4][]byte // last parameter set of each kind, by Kind
}

// Unit is an assembled access unit. Its slices are owned by the Builder and valid until the next
// Add or Reset.
type Unit struct {
	// Data is the access unit in Annex-B format.
	Data []byte
	// NALUs are the NAL units of Data, without start codes. Parameter sets point to storage
	// that is never rewritten (a DTS extractor may keep them); the others are valid until the
	// next Add or Reset.
	NALUs [][]byte
	// Key reports a random-access picture (H.264 IDR, H.265 IRAP).
	Key bool
	// Inserted reports that parameter sets were inserted before the key picture.
	Inserted bool
	// MissingParams reports a key picture for which some parameter set was never seen:
	// it cannot be decoded.
	MissingParams bool
}

// SetParamSet records an out-of-band parameter set (from SDP sprop-parameter-sets, RFC 6184
// §8.1, or sprop-vps/sps/pps, RFC 7798 §7.1). NAL units of other kinds are ignored.
func (b *Builder) SetParamSet(nalu []byte) {
	k := Classify(b.Codec, nalu)
	if k == KindVPS || k == KindSPS || k == KindPPS {
		b.ps[k] = bytes.Clone(nalu)
	}
}

// ParamSet returns the last parameter set of kind k (KindVPS, KindSPS or KindPPS), nil if none.
func (b *Builder) ParamSet(k Kind) []byte {
	if k == KindVPS || k == KindSPS || k == KindPPS {
		return b.ps[k]
	}
	return nil
}

// Add appends one NAL unit (without start code) to the access unit being built.
func (b *Builder) Add(nalu []byte) {
	if len(nalu) == 0 {
		return
	}
	if len(b.buf) == 0 {
		b.firstVCL = -1
	}
	k := Classify(b.Codec, nalu)
	switch k {
	case KindVPS, KindSPS, KindPPS:
		if !b.has[k] {
			b.has[k], b.at[k] = true, len(b.buf)
		}
		if !bytes.Equal(b.ps[k], nalu) {
			b.ps[k] = bytes.Clone(nalu) // never rewritten: Unit.NALUs may be kept
		}
	case KindKey, KindVCL:
		if b.firstVCL < 0 {
			b.firstVCL = len(b.buf)
		}
		b.vcl = true
		b.key = b.key || k == KindKey
	}
	b.buf = append(b.buf, startCode...)
	b.buf = append(b.buf, nalu...)
}

// Len returns the number of bytes added since the last Reset.
func (b *Builder) Len() int { return len(b.buf) }

// Finish completes the access unit. ok is false when it holds no coded picture (only parameter
// sets, which are remembered for the next key frame, or only SEI). The Builder is reset for the
// next access unit either way.
func (b *Builder) Finish() (u Unit, ok bool) {
	if !b.vcl {
		b.Reset()
		return Unit{}, false
	}
	u.Key = b.key
	data := b.buf
	if b.key {
		need := needH264
		if b.Codec == media.CodecH265 {
			need = needH265
		}
		missing := false
		for _, k := range need {
			if !b.has[k] {
				missing = true
				if b.ps[k] == nil {
					u.MissingParams = true
				}
			}
		}
		if missing && !u.MissingParams {
			data = b.insert(need)
			u.Inserted = true
		}
	}
	u.Data = data
	b.nalus = b.nalus[:0]
	for n := data; len(n) > 0; {
		var nalu []byte
		nalu, n = NextNALU(n)
		switch k := Classify(b.Codec, nalu); k {
		case KindVPS, KindSPS, KindPPS:
			// same bytes, in storage that outlives the access unit; a copy when the unit held
			// two different sets of a kind, or a set with trailing zeros or a start code in it
			if !bytes.Equal(nalu, b.ps[k]) {
				b.ps[k] = bytes.Clone(nalu)
			}
			nalu = b.ps[k]
		}
		if len(nalu) > 0 {
			b.nalus = append(b.nalus, nalu)
		}
	}
	u.NALUs = b.nalus
	b.resetState()
	return u, true
}

// insert builds b.out: b.buf with each missing parameter set in decoding order, before the
// first present set of a later kind (an SPS from the SDP goes before the in-band PPS that
// refers to it: a decoder drops a PPS whose SPS it has not seen) or else before the first VCL
// NAL unit.
func (b *Builder) insert(need []Kind) []byte {
	out, from := b.out[:0], 0
	for i, k := range need {
		if b.has[k] {
			continue
		}
		at := b.firstVCL
		for _, later := range need[i+1:] {
			if b.has[later] && b.at[later] < at {
				at = b.at[later]
			}
		}
		at = max(at, from) // a later set sent before an earlier one present: keep buf's order
		out = append(out, b.buf[from:at]...)
		out = append(out, startCode...)
		out = append(out, b.ps[k]...)
		from = at
	}
	out = append(out, b.buf[from:]...)
	b.out = out
	return out
}

func (b *Builder) resetState() {
	b.buf = b.buf[:0]
	b.firstVCL = -1
	b.has = [4]bool{}
	b.key, b.vcl = false, false
}

// Reset drops the access unit being built. Remembered parameter sets are kept.
func (b *Builder) Reset() { b.resetState() }
