package outbox

import (
	"encoding/binary"
	"hash/crc32"
	"time"
)

const (
	// MaxRecordLimit is the largest payload, in bytes, of any record; a length read from disk
	// above it is corruption.
	MaxRecordLimit = 16 << 20

	recordHeaderSize = 24
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record is one entry of the log.
type Record struct {
	// Seq is the sequence number, from 1, increasing by one per record (gaps where records
	// were dropped).
	Seq uint64
	// Time is when the record was appended (wall clock).
	Time time.Time
	// Data is the payload as appended.
	Data []byte
}

// recordHeader is a decoded record header.
type recordHeader struct {
	n    uint32
	seq  uint64
	time int64
	sum  uint32
}

func parseHeader(b []byte) recordHeader {
	return recordHeader{
		n:    binary.LittleEndian.Uint32(b[0:]),
		seq:  binary.LittleEndian.Uint64(b[4:]),
		time: int64(binary.LittleEndian.Uint64(b[12:])),
		sum:  binary.LittleEndian.Uint32(b[20:]),
	}
}

// checksum is the CRC-32C of a record's first 20 header bytes and its payload.
func checksum(head, payload []byte) uint32 {
	return crc32.Update(crc32.Checksum(head[:20], castagnoli), castagnoli, payload)
}

// encodedSize is the size on disk of a record with an n-byte payload.
func encodedSize(n int) int64 { return recordHeaderSize + int64(n) }

// appendRecord appends the encoding of a record to dst.
func appendRecord(dst []byte, seq uint64, unixNano int64, data []byte) []byte {
	var h [recordHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(data)))
	binary.LittleEndian.PutUint64(h[4:], seq)
	binary.LittleEndian.PutUint64(h[12:], uint64(unixNano))
	binary.LittleEndian.PutUint32(h[20:], checksum(h[:], data))
	dst = append(dst, h[:]...)
	return append(dst, data...)
}

// decodeRecord decodes the record at the start of b, whose payload may be at most maxLen
// bytes. It returns the record, its Data aliasing b, and its encoded size. Errors: errTorn when
// b ends inside the record, ErrCorrupt when the length exceeds maxLen or the checksum fails.
func decodeRecord(b []byte, maxLen int) (Record, int, error) {
	if len(b) < recordHeaderSize {
		return Record{}, 0, errTorn
	}
	h := parseHeader(b)
	if int64(h.n) > int64(maxLen) {
		return Record{}, 0, ErrCorrupt
	}
	end := recordHeaderSize + int(h.n)
	if len(b) < end {
		return Record{}, 0, errTorn
	}
	if checksum(b, b[recordHeaderSize:end]) != h.sum {
		return Record{}, 0, ErrCorrupt
	}
	return Record{Seq: h.seq, Time: time.Unix(0, h.time), Data: b[recordHeaderSize:end:end]}, end, nil
}
