// Package ps demultiplexes and multiplexes MPEG-2 program streams (ISO/IEC 13818-1 §2.5), the
// container GB28181 cameras send inside RTP. The Demuxer is written for the field: it emits each
// H.264/H.265 video frame as soon as the transport says the frame is complete, skips audio, and
// tolerates what vendors get wrong (no program stream map, PES packets without PTS, stuffing
// and junk between packets, unbounded video PES, MPEG-1 syntax), counting every oddity.
package ps

import "github.com/vinfer/vinfer/media"

// Start code values (the byte after 00 00 01), ISO/IEC 13818-1 Table 2-18 and §2.5.3.
const (
	idProgramEnd      = 0xB9
	idPack            = 0xBA
	idSystemHeader    = 0xBB
	idStreamMap       = 0xBC
	idPrivate1        = 0xBD
	idPadding         = 0xBE
	idPrivate2        = 0xBF
	idAudioFirst      = 0xC0
	idAudioLast       = 0xDF
	idVideoFirst      = 0xE0
	idVideoLast       = 0xEF
	idECM             = 0xF0
	idEMM             = 0xF1
	idDSMCC           = 0xF2
	idH2221TypeE      = 0xF8
	idStreamDirectory = 0xFF
)

// Stream types of the program stream map, ISO/IEC 13818-1 Table 2-34 and GB/T 28181 Annex C.
const (
	StreamTypeH264  = 0x1B
	StreamTypeH265  = 0x24
	StreamTypeMPEG4 = 0x10
	StreamTypeSVAC  = 0x80 // GB/T 25724 video
	StreamTypeAAC   = 0x0F
	StreamTypeG711A = 0x90
	StreamTypeG711U = 0x91
	StreamTypeG7221 = 0x92
	StreamTypeG7231 = 0x93
	StreamTypeG729  = 0x99
)

// codecOf maps a stream type to a codec vinfer decodes.
func codecOf(streamType byte) media.Codec {
	switch streamType {
	case StreamTypeH264:
		return media.CodecH264
	case StreamTypeH265:
		return media.CodecH265
	}
	return media.CodecUnknown
}

// streamTypeOf maps a codec to its stream type.
func streamTypeOf(c media.Codec) byte {
	if c == media.CodecH265 {
		return StreamTypeH265
	}
	return StreamTypeH264
}

// hasPESHeader reports whether PES packets of stream id carry the optional PES header
// (ISO/IEC 13818-1 §2.4.3.7: all but the stream map, padding, private stream 2, ECM, EMM,
// directory, DSM-CC and H.222.1 type E).
func hasPESHeader(id byte) bool {
	switch id {
	case idStreamMap, idPadding, idPrivate2, idECM, idEMM, idStreamDirectory, idDSMCC, idH2221TypeE:
		return false
	}
	return true
}

// isVideo reports a video stream id (ISO/IEC 13818-1 Table 2-22).
func isVideo(id byte) bool { return id >= idVideoFirst && id <= idVideoLast }

// isAudio reports an audio stream id (ISO/IEC 13818-1 Table 2-22).
func isAudio(id byte) bool { return id >= idAudioFirst && id <= idAudioLast }

// readTimestamp decodes a 33-bit PTS or DTS from the 5 bytes of §2.4.3.7
// ('xxxx' prefix, 3 + 15 + 15 bits separated by marker bits).
func readTimestamp(b []byte) int64 {
	return int64(b[0]>>1&0x07)<<30 | int64(b[1])<<22 | int64(b[2]>>1)<<15 | int64(b[3])<<7 | int64(b[4]>>1)
}

// putTimestamp encodes ts (33 bits) with the 4-bit prefix into 5 bytes.
func putTimestamp(b []byte, prefix byte, ts int64) {
	b[0] = prefix<<4 | byte(ts>>29)&0x0E | 1
	b[1] = byte(ts >> 22)
	b[2] = byte(ts>>14) | 1
	b[3] = byte(ts >> 7)
	b[4] = byte(ts<<1) | 1
}
