// Package h26x classifies H.264 and H.265 NAL units and assembles them into the Annex-B access
// units vinfer's decoders take, with parameter sets in-band before every key frame.
package h26x

import "github.com/vinfer/vinfer/media"

// Kind is what a NAL unit means for access-unit assembly.
type Kind uint8

// NAL unit kinds.
const (
	KindOther Kind = iota // SEI, end of sequence, filler, reserved...
	KindVPS               // H.265 video parameter set (type 32)
	KindSPS               // sequence parameter set (H.264 type 7, H.265 type 33)
	KindPPS               // picture parameter set (H.264 type 8, H.265 type 34)
	KindAUD               // access unit delimiter (H.264 type 9, H.265 type 35)
	KindKey               // VCL NAL unit of a random-access picture: H.264 IDR (5), H.265 IRAP (16-21)
	KindVCL               // any other VCL NAL unit (a coded slice)
)

// Classify returns the kind of nalu (one NAL unit without start code) of codec.
// An empty nalu or an unknown codec is KindOther.
func Classify(codec media.Codec, nalu []byte) Kind {
	if len(nalu) == 0 {
		return KindOther
	}
	switch codec {
	case media.CodecH264: // ITU-T H.264 Table 7-1
		switch nalu[0] & 0x1F {
		case 5:
			return KindKey
		case 1, 2, 3, 4, 20, 21:
			return KindVCL
		case 7:
			return KindSPS
		case 8:
			return KindPPS
		case 9:
			return KindAUD
		}
	case media.CodecH265: // ITU-T H.265 Table 7-1
		switch t := (nalu[0] >> 1) & 0x3F; {
		case t >= 16 && t <= 21:
			return KindKey
		case t < 32:
			return KindVCL
		case t == 32:
			return KindVPS
		case t == 33:
			return KindSPS
		case t == 34:
			return KindPPS
		case t == 35:
			return KindAUD
		}
	}
	return KindOther
}

// NextNALU splits the first NAL unit off an Annex-B byte stream (ITU-T H.264 Annex B): it skips
// leading zero bytes and a start code, and returns the NAL unit up to the next start code with
// trailing zero bytes removed (a NAL unit never ends in 0x00, §7.4.1). rest is what follows; nalu
// is empty when b holds no further NAL unit. Data before the first start code is returned as a
// NAL unit too, so that a stream cut in the middle of a unit is not silently merged.
func NextNALU(b []byte) (nalu, rest []byte) {
	// skip zero_byte / leading_zero_8bits and the start code prefix
	i := 0
	for i < len(b) && b[i] == 0 {
		i++
	}
	if i >= 2 && i < len(b) && b[i] == 1 {
		i++
	} else {
		i = 0 // no start code: take the bytes as they are
	}
	b = b[i:]
	end := len(b)
	next := len(b)
	for j := 0; j+2 < len(b); j++ {
		if b[j+2] > 1 {
			j += 2 // b[j+2] cannot be part of a start code prefix
			continue
		}
		if b[j] == 0 && b[j+1] == 0 && b[j+2] == 1 {
			end, next = j, j
			break
		}
	}
	nalu = b[:end]
	for len(nalu) > 0 && nalu[len(nalu)-1] == 0 {
		nalu = nalu[:len(nalu)-1]
	}
	return nalu, b[next:]
}
