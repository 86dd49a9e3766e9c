package ps

import (
	"encoding/binary"

	"github.com/vinfer/vinfer/media"
)

// Muxer writes video frames as an MPEG-2 program stream the way GB28181 devices do (GB/T
// 28181-2016 Annex C): every frame starts with a pack header (§2.5.3.3); key frames add a system
// header (§2.5.3.5) and a program stream map (§2.5.4); the frame follows in video PES packets
// (§2.4.3.6), the first with PTS (and DTS when it differs). vinfer uses it to test the Demuxer
// against a sender it controls; Quirks imitate non-conforming devices.
type Muxer struct {
	// Codec is the video codec announced in the stream map.
	Codec media.Codec
	// MaxPES is the most payload bytes per PES packet; 0 means the most that fits (65516).
	MaxPES int
	// Quirks make the output non-conforming on purpose.
	Quirks Quirks
}

// Quirks imitate devices seen in the field, for tests.
type Quirks struct {
	NoStreamMap  bool   // never write the system header and the stream map
	NoPTS        bool   // write PES packets without PTS/DTS
	PackStuffing int    // stuffing bytes in each pack header (0-7)
	Junk         []byte // bytes written between the pack header and the first PES packet
	Unbounded    bool   // one video PES per frame with PES_packet_length 0
	MPEG1        bool   // MPEG-1 (ISO/IEC 11172-1) pack and PES headers
	Audio        bool   // a G.711 A-law audio PES packet after each frame
}

// muxRate is the program_mux_rate written, in units of 50 bytes/s (10 Mbit/s).
var muxRate uint32 = 25000

const (
	videoID  = 0xE0
	audioID  = 0xC0
	maxPESHd = 3 + 10
)

// Frame appends the program stream of one video frame (es: the access unit in Annex-B; pts and
// dts in 90 kHz ticks) to dst.
func (m *Muxer) Frame(dst, es []byte, pts, dts int64, key bool) []byte {
	dst = m.pack(dst, dts)
	if key && !m.Quirks.NoStreamMap {
		dst = m.systemHeader(dst)
		dst = m.streamMap(dst)
	}
	dst = append(dst, m.Quirks.Junk...)
	if m.Quirks.Unbounded {
		dst = m.pesHeader(dst, videoID, 0, pts, dts, true)
		dst = append(dst, es...)
	} else {
		max := m.MaxPES
		if max <= 0 || max > 0xFFFF-maxPESHd {
			max = 0xFFFF - maxPESHd
		}
		for first := true; first || len(es) > 0; first = false {
			n := min(len(es), max)
			dst = m.pesHeader(dst, videoID, n, pts, dts, first)
			dst = append(dst, es[:n]...)
			es = es[n:]
		}
	}
	if m.Quirks.Audio {
		silence := [160]byte{}
		for i := range silence {
			silence[i] = 0xD5 // G.711 A-law zero
		}
		dst = m.pesHeader(dst, audioID, len(silence), pts, pts, true)
		dst = append(dst, silence[:]...)
	}
	return dst
}

// pack appends a pack header with system clock reference scr (90 kHz base, extension 0).
func (m *Muxer) pack(dst []byte, scr int64) []byte {
	dst = append(dst, 0, 0, 1, idPack)
	if m.Quirks.MPEG1 {
		var b [8]byte
		putTimestamp(b[:5], 2, scr)
		b[5] = 0x80 | byte(muxRate>>15)
		b[6] = byte(muxRate >> 7)
		b[7] = byte(muxRate<<1) | 1
		return append(dst, b[:]...)
	}
	stuff := min(max(m.Quirks.PackStuffing, 0), 7)
	dst = append(dst,
		0x44|byte(scr>>27)&0x38|byte(scr>>28)&0x03,
		byte(scr>>20),
		byte(scr>>12)&0xF8|0x04|byte(scr>>13)&0x03,
		byte(scr>>5),
		byte(scr<<3)&0xF8|0x04,
		0x01,
		byte(muxRate>>14), byte(muxRate>>6), byte(muxRate<<2)|0x03,
		0xF8|byte(stuff))
	for range stuff {
		dst = append(dst, 0xFF)
	}
	return dst
}

// systemHeader appends a system header announcing one video and, with Quirks.Audio, one audio
// stream.
func (m *Muxer) systemHeader(dst []byte) []byte {
	audioBound := byte(0)
	if m.Quirks.Audio {
		audioBound = 1
	}
	body := []byte{
		0x80 | byte(muxRate>>15), byte(muxRate >> 7), byte(muxRate<<1) | 1,
		audioBound << 2, 0xE1, 0x7F,
		videoID, 0xE0 | 1<<5 | 400>>8, 400 & 0xFF, // P-STD buffer 400 KiB
	}
	if m.Quirks.Audio {
		body = append(body, audioID, 0xC0|32>>8, 32&0xFF) // 32 x 128 bytes
	}
	dst = append(dst, 0, 0, 1, idSystemHeader)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(body)))
	return append(dst, body...)
}

// streamMap appends a program stream map with the video (and audio) stream.
func (m *Muxer) streamMap(dst []byte) []byte {
	entries := []byte{streamTypeOf(m.Codec), videoID, 0, 0}
	if m.Quirks.Audio {
		entries = append(entries, StreamTypeG711A, audioID, 0, 0)
	}
	start := len(dst)
	dst = append(dst, 0, 0, 1, idStreamMap)
	dst = binary.BigEndian.AppendUint16(dst, uint16(2+2+2+len(entries)+4))
	dst = append(dst, 0xA0, 0xFF, 0, 0) // current, version 0; no program descriptors
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(entries)))
	dst = append(dst, entries...)
	return binary.BigEndian.AppendUint32(dst, crc32MPEG(dst[start:]))
}

// pesHeader appends a PES header for n payload bytes (n 0 and id video: unbounded); withTS
// adds PTS (and DTS when it differs).
func (m *Muxer) pesHeader(dst []byte, id byte, n int, pts, dts int64, withTS bool) []byte {
	withTS = withTS && !m.Quirks.NoPTS
	var opt [10]byte
	var optLen int
	flags := byte(0)
	if withTS {
		if dts != pts {
			putTimestamp(opt[:5], 3, pts)
			putTimestamp(opt[5:], 1, dts)
			optLen, flags = 10, 0xC0
		} else {
			putTimestamp(opt[:5], 2, pts)
			optLen, flags = 5, 0x80
		}
	}
	dst = append(dst, 0, 0, 1, id)
	if m.Quirks.MPEG1 {
		if optLen == 0 {
			opt[0], optLen = 0x0F, 1
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(pesLen(n, optLen)))
		return append(dst, opt[:optLen]...)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(pesLen(n, 3+optLen)))
	align := byte(0)
	if withTS {
		align = 0x04 // data_alignment_indicator: the payload starts with an access unit
	}
	dst = append(dst, 0x80|align, flags, byte(optLen))
	return append(dst, opt[:optLen]...)
}

// pesLen is PES_packet_length for n payload bytes after hdr header bytes; 0 (unbounded) for n 0.
func pesLen(n, hdr int) int {
	if n == 0 {
		return 0
	}
	return hdr + n
}

// crc32MPEG is the CRC of ISO/IEC 13818-1 Annex A (polynomial 0x04C11DB7, initial 0xFFFFFFFF,
// not reflected, no final XOR).
func crc32MPEG(b []byte) uint32 {
	crc := uint32(0xFFFFFFFF)
	for _, v := range b {
		crc ^= uint32(v) << 24
		for range 8 {
			if crc&0x80000000 != 0 {
				crc = crc<<1 ^ 0x04C11DB7
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
