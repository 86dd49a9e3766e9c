package ps

import (
	"encoding/binary"

	"github.com/vinfer/vinfer/internal/h26x"
	"github.com/vinfer/vinfer/media"
)

// DefaultMaxFrame bounds the size of one video frame (a 4K key frame is a few MiB).
const DefaultMaxFrame = 16 << 20

// Frame is one video access unit of a program stream.
type Frame struct {
	// Codec comes from the program stream map or, without one, from the NAL units;
	// media.CodecUnknown when neither tells (no map, and no parameter set seen yet).
	Codec media.Codec
	// StreamID is the PES stream_id (0xE0-0xEF).
	StreamID byte
	// Data is the elementary stream of the frame (Annex-B for H.264/H.265), valid during
	// Demuxer.OnFrame only.
	Data []byte
	// PTS and DTS are 33-bit timestamps in 90 kHz ticks, present when HasPTS / HasDTS.
	PTS, DTS       int64
	HasPTS, HasDTS bool
}

// Demuxer extracts the video frames of an MPEG-2 program stream (ISO/IEC 13818-1 §2.5) fed in
// arbitrary chunks (RTP payloads). A frame is complete when the next video PES packet carries
// another PTS, or when the transport calls Flush (GB28181 sets the RTP marker on a frame's last
// packet): frames are delivered without waiting for the next one.
//
// Payload bytes are copied once, into the frame buffer; only headers cut between two chunks
// are buffered. Buffers are reused: after warm-up the Demuxer does not allocate. Not safe for
// concurrent use, except Stats.
type Demuxer struct {
	// OnFrame receives each complete video frame.
	OnFrame func(f *Frame)
	// MaxFrame bounds the size of a frame; 0 means DefaultMaxFrame.
	MaxFrame int

	st   counters
	pend []byte // unparsed bytes: a header cut between two Writes

	remaining int  // bytes of the current length-delimited payload still to come
	unbounded bool // in a video PES of length 0: payload runs to the next start code
	toFrame   bool // the current payload belongs to the video frame

	types   [256]byte // stream_type by stream_id, from the stream map
	haveMap bool
	videoID byte // the video stream followed, 0 until the first video PES
	probed  media.Codec
	checked bool // the stream map's codec was compared with the NAL units

	frame    []byte
	inFrame  bool
	oversize bool
	fID      byte
	fPTS     int64
	fDTS     int64
	fHasPTS  bool
	fHasDTS  bool
	lastPTS  int64
	lastHas  bool
	out      Frame
}

// Stats returns the counters. Safe for concurrent use.
func (d *Demuxer) Stats() Stats { return d.st.snapshot() }

// Write feeds the next bytes of the program stream.
func (d *Demuxer) Write(b []byte) {
	if len(d.pend) == 0 {
		n := d.parse(b)
		d.pend = append(d.pend, b[n:]...)
		return
	}
	d.pend = append(d.pend, b...)
	n := d.parse(d.pend)
	d.pend = d.pend[:copy(d.pend, d.pend[n:])]
}

// Flush tells that the transport ended a frame (RTP marker bit, new RTP timestamp): the frame
// in progress is delivered now. It is ignored while a PES packet is incomplete (counted as
// EarlyFlush).
func (d *Demuxer) Flush() {
	switch {
	case d.unbounded:
		if d.toFrame { // the bytes held back in case they began a start code are payload
			d.appendES(d.pend)
		}
		d.pend = d.pend[:0]
		d.unbounded, d.toFrame = false, false
	case d.remaining > 0:
		d.st.earlyFlush.Add(1)
		return
	}
	d.emit()
}

// Cut ends the frame in progress at a gap (the bytes after those written were lost): the
// video bytes that arrived are delivered now as the frame (its elementary stream cut at the
// gap, for the decoder to conceal the rest; counted as Cut), the partial packet is dropped,
// and parsing resumes at the next start code. What the stream map said is kept.
func (d *Demuxer) Cut() {
	if d.unbounded && d.toFrame {
		d.appendES(d.pend)
	}
	d.pend = d.pend[:0]
	d.remaining, d.unbounded, d.toFrame = 0, false, false
	if d.inFrame {
		d.st.cut.Add(1)
	}
	d.emit()
}

// Reset drops everything in progress after data was lost: the partial frame (counted as
// Truncated) and any partial packet. Parsing resumes at the next start code. What the stream
// map said is kept.
func (d *Demuxer) Reset() {
	if d.inFrame {
		d.st.truncated.Add(1)
	}
	d.pend = d.pend[:0]
	d.remaining, d.unbounded, d.toFrame = 0, false, false
	d.frame, d.inFrame, d.oversize = d.frame[:0], false, false
}

// parse consumes units from b and returns how many bytes it used; the rest is an incomplete
// header.
func (d *Demuxer) parse(b []byte) int {
	pos := 0
	for pos < len(b) {
		if d.remaining > 0 {
			n := min(d.remaining, len(b)-pos)
			if d.toFrame {
				d.appendES(b[pos : pos+n])
			}
			pos += n
			d.remaining -= n
			if d.remaining == 0 {
				d.toFrame = false
			}
			continue
		}
		if d.unbounded {
			i := nextStartCode(b[pos:])
			if i < 0 { // keep 3 bytes: they may begin a start code
				i = max(len(b)-pos-3, 0)
				if d.toFrame {
					d.appendES(b[pos : pos+i])
				}
				return pos + i
			}
			if d.toFrame {
				d.appendES(b[pos : pos+i])
			}
			pos += i
			d.unbounded, d.toFrame = false, false
			continue
		}
		rest := b[pos:]
		if len(rest) < 4 {
			return pos
		}
		if rest[0] != 0 || rest[1] != 0 || rest[2] != 1 || rest[3] < idProgramEnd {
			i := nextStartCode(rest)
			if i < 0 {
				i = len(rest) - 3
			}
			d.st.junkBytes.Add(uint64(i))
			pos += i
			continue
		}
		n := d.unit(rest)
		if n == 0 {
			return pos // wait for the rest of the header
		}
		pos += n
	}
	return pos
}

// nextStartCode returns the index of the next 00 00 01 followed by a stream id (>= 0xB9), or -1.
// Inside H.264/H.265 data such a sequence cannot occur: a NAL unit header byte is below 0x80
// and emulation prevention removes other 00 00 01.
func nextStartCode(b []byte) int {
	for i := 0; i+3 < len(b); i++ {
		if b[i+2] > 1 {
			i += 2
			continue
		}
		if b[i] == 0 && b[i+1] == 0 && b[i+2] == 1 && b[i+3] >= idProgramEnd {
			return i
		}
	}
	return -1
}

// unit parses the unit that starts at b[0:4] (a start code) and returns its header length, or 0
// when b does not hold the whole header yet. Payloads are left to parse via remaining.
func (d *Demuxer) unit(b []byte) int {
	id := b[3]
	switch {
	case id == idProgramEnd:
		return 4
	case id == idPack:
		return d.pack(b)
	case id == idSystemHeader || id == idStreamMap:
		if len(b) < 6 {
			return 0
		}
		l := 6 + int(binary.BigEndian.Uint16(b[4:6]))
		if len(b) < l {
			return 0
		}
		if id == idStreamMap {
			d.streamMap(b[6:l])
		} else {
			d.st.systemHeaders.Add(1)
		}
		return l
	case !hasPESHeader(id):
		if len(b) < 6 {
			return 0
		}
		d.st.otherPES.Add(1)
		d.remaining = int(binary.BigEndian.Uint16(b[4:6]))
		return 6
	}
	return d.pes(b)
}

// pack parses a pack header (§2.5.3.3), or an MPEG-1 one (ISO/IEC 11172-1 §2.4.3.2).
func (d *Demuxer) pack(b []byte) int {
	if len(b) < 5 {
		return 0
	}
	switch {
	case b[4]>>6 == 1: // '01': MPEG-2
		if len(b) < 14 {
			return 0
		}
		l := 14 + int(b[13]&7)
		if len(b) < l {
			return 0
		}
		if l > 14 {
			d.st.packStuffing.Add(1)
		}
		d.st.packs.Add(1)
		return l
	case b[4]>>4 == 2: // '0010': MPEG-1
		if len(b) < 12 {
			return 0
		}
		d.st.packs.Add(1)
		d.st.mpeg1.Add(1)
		return 12
	}
	d.st.invalid.Add(1)
	return 4
}

// streamMap parses a program stream map (§2.5.4.1) body: everything after its length field.
func (d *Demuxer) streamMap(b []byte) {
	if len(b) < 6 {
		d.st.invalid.Add(1)
		return
	}
	p := 4 + int(binary.BigEndian.Uint16(b[2:4])) // skip the program descriptors
	if p+2 > len(b) {
		d.st.invalid.Add(1)
		return
	}
	end := p + 2 + int(binary.BigEndian.Uint16(b[p:p+2]))
	p += 2
	if end > len(b) {
		d.st.invalid.Add(1)
		end = len(b)
	}
	var types [256]byte
	for p+4 <= end {
		types[b[p+1]] = b[p]
		p += 4 + int(binary.BigEndian.Uint16(b[p+2:p+4]))
	}
	if d.haveMap && d.videoID != 0 && types[d.videoID] != d.types[d.videoID] {
		d.probed, d.checked = media.CodecUnknown, false // the codec changed: look again
	}
	d.types, d.haveMap = types, true
	d.st.streamMaps.Add(1)
}

// pes parses a PES packet header (§2.4.3.6, or MPEG-1 syntax) and sets up its payload.
func (d *Demuxer) pes(b []byte) int {
	if len(b) < 7 {
		return 0
	}
	id := b[3]
	length := int(binary.BigEndian.Uint16(b[4:6])) // 0: unbounded (video only)
	end := 6 + length                              // end of the packet, when bounded
	if length == 0 {
		end = len(b) + 1<<16
	}
	var pts, dts int64
	var hasPTS, hasDTS bool
	var hdr int
	if b[6]&0xC0 == 0x80 { // MPEG-2 PES header
		if len(b) < 9 {
			return 0
		}
		hdr = 9 + int(b[8])
		if hdr > end {
			return d.skipInvalid(length)
		}
		if len(b) < hdr {
			return 0
		}
		switch b[7] >> 6 {
		case 2:
			if hdr >= 14 {
				pts, hasPTS = readTimestamp(b[9:14]), true
			}
		case 3:
			if hdr >= 19 {
				pts, hasPTS = readTimestamp(b[9:14]), true
				dts, hasDTS = readTimestamp(b[14:19]), true
			}
		}
	} else { // MPEG-1 PES header (ISO/IEC 11172-1 §2.4.3.3)
		i := 6
		for ; ; i++ { // stuffing
			if i >= end {
				return d.skipInvalid(length)
			}
			if i >= len(b) {
				return 0
			}
			if b[i] != 0xFF || i == 6+16 {
				break
			}
		}
		if b[i]>>6 == 1 { // STD_buffer_scale and STD_buffer_size
			i += 2
			if i >= end {
				return d.skipInvalid(length)
			}
			if i >= len(b) {
				return 0
			}
		}
		switch b[i] >> 4 {
		case 2, 3:
			n := 5 * int(b[i]>>4-1)
			if i+n > end {
				return d.skipInvalid(length)
			}
			if i+n > len(b) {
				return 0
			}
			pts, hasPTS = readTimestamp(b[i:i+5]), true
			if n == 10 {
				dts, hasDTS = readTimestamp(b[i+5:i+10]), true
			}
			i += n
		default:
			if b[i] != 0x0F {
				return d.skipInvalid(length)
			}
			i++
		}
		hdr = i
		d.st.mpeg1.Add(1)
	}
	payload := end - hdr
	video := d.follow(id)
	if !video {
		if length == 0 {
			d.unbounded = true
		} else {
			d.remaining = payload
		}
		return hdr
	}
	d.st.videoPES.Add(1)
	if d.inFrame && hasPTS && (!d.fHasPTS || pts != d.fPTS) {
		d.emit()
	}
	if !d.inFrame {
		if !hasPTS {
			d.st.pesWithoutPTS.Add(1)
		} else if d.lastHas && pts == d.lastPTS {
			d.st.splitFrames.Add(1)
		}
		d.inFrame, d.fID = true, id
		d.fPTS, d.fHasPTS, d.fDTS, d.fHasDTS = pts, hasPTS, dts, hasDTS
	}
	d.toFrame = true
	if length == 0 {
		d.unbounded = true
		d.st.unboundedPES.Add(1)
	} else {
		d.remaining = payload
		d.toFrame = payload > 0
	}
	return hdr
}

// skipInvalid counts a PES header that does not fit its packet and skips the packet.
func (d *Demuxer) skipInvalid(length int) int {
	d.st.invalid.Add(1)
	if length == 0 {
		return 4 // resync at the next start code
	}
	d.remaining = length
	return 6
}

// follow reports whether PES packets of stream id belong to the video stream followed: the
// first H.264/H.265 video stream (by the stream map, or any video id without one).
func (d *Demuxer) follow(id byte) bool {
	switch {
	case isAudio(id) || id == idPrivate1:
		d.st.audioPES.Add(1)
		return false
	case !isVideo(id):
		d.st.otherPES.Add(1)
		return false
	case d.haveMap && d.types[id] != 0 && codecOf(d.types[id]) == media.CodecUnknown:
		d.st.unsupportedVideo.Add(1)
		return false
	case d.videoID == 0:
		d.videoID = id
	case id != d.videoID:
		d.st.extraVideo.Add(1)
		return false
	}
	return true
}

func (d *Demuxer) appendES(p []byte) {
	if d.oversize {
		return
	}
	max := d.MaxFrame
	if max <= 0 {
		max = DefaultMaxFrame
	}
	if len(d.frame)+len(p) > max {
		d.oversize = true
		return
	}
	d.frame = append(d.frame, p...)
}

// emit delivers the frame in progress.
func (d *Demuxer) emit() {
	if !d.inFrame {
		return
	}
	defer func() {
		d.frame, d.inFrame, d.oversize = d.frame[:0], false, false
	}()
	if d.oversize {
		d.st.oversize.Add(1)
		return
	}
	if len(d.frame) == 0 {
		return
	}
	d.lastPTS, d.lastHas = d.fPTS, d.fHasPTS
	codec := media.CodecUnknown
	if d.haveMap {
		codec = codecOf(d.types[d.fID])
	}
	if !d.checked {
		if d.probed == media.CodecUnknown {
			d.probed = h26x.Probe(d.frame)
		}
		if d.probed != media.CodecUnknown {
			d.checked = true
			if codec != media.CodecUnknown && codec != d.probed {
				d.st.streamMapMismatch.Add(1)
			}
		}
	}
	if d.probed != media.CodecUnknown {
		codec = d.probed // the NAL units are right when the stream map is not
	}
	if !d.haveMap || d.types[d.fID] == 0 {
		d.st.noStreamMap.Add(1)
	}
	d.out = Frame{
		Codec: codec, StreamID: d.fID, Data: d.frame,
		PTS: d.fPTS, DTS: d.fDTS, HasPTS: d.fHasPTS, HasDTS: d.fHasDTS,
	}
	d.st.frames.Add(1)
	if d.OnFrame != nil {
		d.OnFrame(&d.out)
	}
}
