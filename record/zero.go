package record

import (
	"bytes"
	"encoding/binary"
	"os"
	"time"
)

// zeroTag starts the payload of the free box (ISO/IEC 14496-12 §8.1.2: readers skip it) that
// follows a segment's init section; then comes the source PTS of the segment's media time 0
// (its first unit's DTS) in nanoseconds, int64 big-endian. A frame the file presents at media
// time m is the source's frame of PTS zero+m: the results log's PTS (docs/recording.md).
const zeroTag = "vinfzero"

// zeroBoxLen is the free box's size: header, tag, value.
const zeroBoxLen = 8 + len(zeroTag) + 8

// zeroBox returns the free box holding zero.
func zeroBox(zero time.Duration) []byte {
	b := make([]byte, 0, zeroBoxLen)
	b = binary.BigEndian.AppendUint32(b, uint32(zeroBoxLen))
	b = append(b, "free"...)
	b = append(b, zeroTag...)
	return binary.BigEndian.AppendUint64(b, uint64(zero))
}

// stripZero returns head (a segment's boxes before its first fragment) without the zero box:
// segments of equal parameter sets have equal stripped heads.
func stripZero(head []byte) []byte {
	if i := bytes.Index(head, []byte("free"+zeroTag)); i >= 4 && i-4+zeroBoxLen <= len(head) &&
		binary.BigEndian.Uint32(head[i-4:]) == uint32(zeroBoxLen) {
		return append(head[:i-4:i-4], head[i-4+zeroBoxLen:]...)
	}
	return head
}

// readZero reads a segment's zero from its free box among the boxes before its first fragment;
// ok is false without one (a segment written before vinfer kept it).
func readZero(f *os.File) (zero time.Duration, ok bool) {
	fi, err := f.Stat()
	if err != nil {
		return 0, false
	}
	var hdr [zeroBoxLen]byte
	for off, i := int64(0), 0; off+8 <= fi.Size() && i < 8; i++ {
		if _, err := f.ReadAt(hdr[:8], off); err != nil {
			return 0, false
		}
		n := int64(binary.BigEndian.Uint32(hdr[:4]))
		switch typ := string(hdr[4:8]); {
		case n < 8 || typ == "moof" || typ == "mdat":
			return 0, false
		case typ == "free" && n == int64(zeroBoxLen):
			if _, err := f.ReadAt(hdr[:], off); err != nil || string(hdr[8:16]) != zeroTag {
				return 0, false
			}
			return time.Duration(binary.BigEndian.Uint64(hdr[16:])), true
		}
		off += n
	}
	return 0, false
}

// headZero reads the zero box from head (a segment's boxes before its first fragment).
func headZero(head []byte) (zero time.Duration, ok bool) {
	i := bytes.Index(head, []byte("free"+zeroTag))
	if i < 4 || i-4+zeroBoxLen > len(head) {
		return 0, false
	}
	return time.Duration(binary.BigEndian.Uint64(head[i-4+16:])), true
}
