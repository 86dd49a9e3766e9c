package rtp

import (
	"encoding/binary"
	"errors"

	"github.com/vinfer/vinfer/media"
)

// Payload errors. Each drops the packet it describes; the access unit goes on.
var (
	// ErrPayloadTruncated is a payload shorter than its headers or aggregation sizes say.
	ErrPayloadTruncated = errors.New("rtp: truncated payload")
	// ErrPayloadType is a NAL unit type the payload formats here do not carry (H.264 STAP-B,
	// MTAP, FU-B: interleaved mode; H.265 PACI).
	ErrPayloadType = errors.New("rtp: unsupported payload NAL unit type")
)

// maxNALU bounds one reassembled NAL unit (a 4K intra picture in one slice fits).
const maxNALU = 8 << 20

// unpacker extracts the NAL units of RTP payloads in sequence order: single NAL unit packets,
// aggregation packets (H.264 STAP-A, RFC 6184 §5.7.1; H.265 AP, RFC 7798 §4.4.2) and
// fragmentation units (H.264 FU-A, RFC 6184 §5.8; H.265 FU, RFC 7798 §4.4.3).
//
// Loss inside a fragmented NAL unit does not throw the NAL unit away: what arrived before the
// gap is kept and handed out truncated when the NAL unit ends (or the next one starts), as
// FFmpeg's RTP depacketizer keeps what it has. A decoder decodes the head of a truncated slice
// and conceals the rest; fragments after the gap are dropped, since a slice cannot be resumed
// mid-way. A fragmented NAL unit whose start was lost is dropped whole: without its header
// nothing of it can be decoded.
type unpacker struct {
	codec media.Codec

	frag      []byte // the fragmented NAL unit being reassembled, header included
	inFrag    bool   // frag holds the start of a NAL unit
	truncated bool   // a fragment of frag was lost: further fragments are skipped
	out       [][]byte
	keep      [][]byte // storage of out's NAL units (reused)
}

// lost reports that packets are missing before the next payload.
func (u *unpacker) lost() {
	if u.inFrag {
		u.truncated = true
	}
}

// reset drops a NAL unit in progress (a new session).
func (u *unpacker) reset() { u.frag, u.inFrag, u.truncated = u.frag[:0], false, false }

// push unpacks one payload. nalus are the NAL units completed by it (valid until the next
// call); truncated counts those that lost fragments. err reports a payload that could not be
// parsed, or fragments whose start was lost (ErrPayloadTruncated).
func (u *unpacker) push(p []byte) (nalus [][]byte, truncated int, err error) {
	u.out = u.out[:0]
	if len(p) < u.headerLen() {
		return nil, 0, ErrPayloadTruncated
	}
	typ, fu, agg := u.classify(p)
	if !fu && u.inFrag {
		// the end of the fragmented NAL unit was lost: hand out what arrived
		truncated += u.emitFrag(false)
	}
	switch {
	case typ < 0:
		return u.out, truncated, ErrPayloadType
	case agg:
		err = u.aggregate(p[u.headerLen():])
	case fu:
		var t int
		t, err = u.fragment(p)
		truncated += t
	default:
		u.add(p)
	}
	return u.out, truncated, err
}

func (u *unpacker) headerLen() int {
	if u.codec == media.CodecH265 {
		return 2
	}
	return 1
}

// classify returns the payload's NAL unit type (-1 when unsupported), and whether it is a
// fragmentation unit or an aggregation packet.
func (u *unpacker) classify(p []byte) (typ int, fu, agg bool) {
	if u.codec == media.CodecH265 {
		typ = int(p[0]>>1) & 0x3F
		switch typ {
		case 48:
			return typ, false, true
		case 49:
			return typ, true, false
		case 50:
			return -1, false, false
		}
		return typ, false, false
	}
	typ = int(p[0] & 0x1F)
	switch typ {
	case 24:
		return typ, false, true
	case 28:
		return typ, true, false
	case 0, 25, 26, 27, 29, 30, 31:
		return -1, false, false
	}
	return typ, false, false
}

func (u *unpacker) aggregate(p []byte) error {
	// STAP-A (RFC 6184 §5.7.1) and AP without DON (RFC 7798 §4.4.2): size, NAL unit, repeated
	for len(p) > 0 {
		if len(p) < 2 {
			return ErrPayloadTruncated
		}
		n := int(binary.BigEndian.Uint16(p))
		p = p[2:]
		if n == 0 || n > len(p) {
			return ErrPayloadTruncated
		}
		u.add(p[:n])
		p = p[n:]
	}
	return nil
}

// fragment takes one fragmentation unit.
func (u *unpacker) fragment(p []byte) (truncated int, err error) {
	h := u.headerLen()
	if len(p) < h+1 {
		return 0, ErrPayloadTruncated
	}
	fh := p[h]
	start, end := fh&0x80 != 0, fh&0x40 != 0
	data := p[h+1:]
	if start {
		if u.inFrag {
			truncated += u.emitFrag(false) // the previous one never ended
		}
		u.frag = u.frag[:0]
		if u.codec == media.CodecH265 {
			// rebuild the NAL unit header: type from the FU header, the rest from the payload's
			u.frag = append(u.frag, p[0]&0x81|(fh&0x3F)<<1, p[1])
		} else {
			u.frag = append(u.frag, p[0]&0xE0|fh&0x1F)
		}
		u.inFrag, u.truncated = true, false
	} else if !u.inFrag {
		return 0, ErrPayloadTruncated // the start was lost
	}
	if !u.truncated {
		if len(u.frag)+len(data) > maxNALU {
			u.truncated = true
		} else {
			u.frag = append(u.frag, data...)
		}
	}
	if end {
		truncated += u.emitFrag(true)
	}
	return truncated, nil
}

// emitFrag hands out the fragmented NAL unit in progress, ended reporting that its last
// fragment arrived; it returns 1 when the NAL unit is truncated.
func (u *unpacker) emitFrag(ended bool) int {
	t := 0
	if u.truncated || !ended {
		t = 1
	}
	if len(u.frag) > u.headerLen() {
		u.add(u.frag)
	}
	u.inFrag, u.truncated = false, false
	return t
}

// flush hands out a fragmented NAL unit whose end was lost, at the end of its access unit.
func (u *unpacker) flush() (nalus [][]byte, truncated int) {
	u.out = u.out[:0]
	if u.inFrag {
		truncated = u.emitFrag(false)
	}
	return u.out, truncated
}

// add appends a copy of one NAL unit to the output.
func (u *unpacker) add(n []byte) {
	i := len(u.out)
	if i < len(u.keep) {
		u.keep[i] = append(u.keep[i][:0], n...)
	} else {
		u.keep = append(u.keep, append([]byte(nil), n...))
	}
	u.out = append(u.out, u.keep[i])
}

// looksLikeOtherCodec reports that payload p, received for codec, parses as a common NAL unit of
// the other codec and not as one of its own: H.265's two-byte header (RFC 7798 §1.1.4) has
// nuh_layer_id 0 and TemporalId+1 = 1 in its second byte, and its types read as H.264's
// unspecified type 0 or the data partitions 2-4 that cameras do not use; H.264's common types
// (RFC 6184 §5.2) read as H.265 types that are reserved or PACI, or with TemporalId+1 = 0.
func looksLikeOtherCodec(codec media.Codec, p []byte) bool {
	if len(p) < 2 || p[0]&0x80 != 0 {
		return false
	}
	if codec == media.CodecH265 {
		t264 := p[0] & 0x1F
		t265 := p[0] >> 1 & 0x3F
		common264 := t264 == 1 || t264 == 5 || t264 == 6 || t264 == 7 || t264 == 8 || t264 == 24 || t264 == 28
		return common264 && (t265 >= 41 && t265 <= 47 || t265 >= 50 || p[1]&7 == 0)
	}
	t264 := p[0] & 0x1F
	t265 := p[0] >> 1 & 0x3F
	common265 := t265 <= 21 || t265 >= 32 && t265 <= 40 || t265 == 48 || t265 == 49
	return p[1] == 0x01 && common265 && (t264 == 0 || t264 >= 2 && t264 <= 4 || t264 >= 30)
}
