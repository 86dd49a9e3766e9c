package outbox

import (
	"bytes"
	"testing"
)

// FuzzScan feeds arbitrary bytes to the segment scanner and record decoder: they must never
// panic, and the valid prefix they report must re-encode to the same bytes.
func FuzzScan(f *testing.F) {
	f.Add(segmentBytes(1, 3, func(i int) []byte { return []byte("event") }))
	f.Add(segmentBytes(1, 1, func(i int) []byte { return nil })[:30])
	f.Add([]byte("VOBS\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &segment{base: 1}
		_ = s.scan(bytes.NewReader(data), int64(len(data)), 1<<10)
		if s.size > int64(len(data)) {
			t.Fatalf("valid prefix %d beyond %d bytes", s.size, len(data))
		}
		if s.size >= segHeaderSize {
			pos, want := int64(segHeaderSize), uint64(1)
			for pos < s.size {
				r, n, err := decodeRecord(data[pos:s.size], 1<<10)
				if err != nil || r.Seq != want {
					t.Fatalf("record %d in the valid prefix: %v", want, err)
				}
				if !bytes.Equal(appendRecord(nil, r.Seq, r.Time.UnixNano(), r.Data), data[pos:pos+int64(n)]) {
					t.Fatal("re-encoding differs")
				}
				pos += int64(n)
				want++
			}
			if want-1 != s.count() {
				t.Fatalf("count %d, decoded %d", s.count(), want-1)
			}
		}
		for off := 0; off < len(data); off++ {
			decodeRecord(data[off:], 1<<10)
		}
	})
}
