package h26x

import "github.com/vinfer/vinfer/media"

// Probe guesses the codec of an Annex-B elementary stream from its NAL unit headers, for
// containers that do not say (an MPEG program stream without a stream map). It recognises
// parameter sets and IDR pictures: H.265 VPS/SPS/PPS/IRAP headers have a second byte of 0x01
// (layer 0, temporal id 1), H.264 SPS/PPS/IDR headers have nal_ref_idc > 0. It returns
// media.CodecUnknown when the data holds none of them.
func Probe(annexb []byte) media.Codec {
	h264, h265 := 0, 0
	for b := annexb; len(b) > 0; {
		var n []byte
		n, b = NextNALU(b)
		if len(n) < 2 || n[0]&0x80 != 0 {
			continue
		}
		if t := n[0] >> 1 & 0x3F; n[0]&1 == 0 && n[1] == 0x01 && (t >= 32 && t <= 34 || t >= 16 && t <= 21) {
			h265++
		}
		if t := n[0] & 0x1F; n[0]&0x60 != 0 && (t == 5 || t == 7 || t == 8) {
			h264++
		}
	}
	switch {
	case h265 > h264:
		return media.CodecH265
	case h264 > h265:
		return media.CodecH264
	}
	return media.CodecUnknown
}
