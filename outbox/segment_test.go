package outbox

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// segmentBytes encodes a segment of n records from base, record i holding payload(i).
func segmentBytes(base uint64, n int, payload func(i int) []byte) []byte {
	b := segHeader(base)
	for i := range n {
		b = appendRecord(b, base+uint64(i), int64(i), payload(i))
	}
	return b
}

func TestSegmentName(t *testing.T) {
	base, ok := parseSegName(segName(12345))
	if !ok || base != 12345 || segName(9) >= segName(10) {
		t.Fatal(base, ok)
	}
	for _, bad := range []string{"1.seg", "00000000000000000000.seg", "0000000000000000000x.seg", "00000000000000000001.sex"} {
		if _, ok := parseSegName(bad); ok {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestSegmentScan(t *testing.T) {
	pay := func(i int) []byte { return []byte(fmt.Sprintf("record %d", i)) }
	b := segmentBytes(5, 10, pay)
	s := &segment{base: 5}
	if err := s.scan(bytes.NewReader(b), int64(len(b)), 100); err != nil || s.count() != 10 || s.size != int64(len(b)) {
		t.Fatalf("clean: %v count %d size %d", err, s.count(), s.size)
	}
	end9 := s.size - encodedSize(len(pay(9)))
	for _, tc := range []struct {
		name string
		data []byte
		want error
		keep uint64
	}{
		{"empty", nil, errTorn, 0},
		{"short header", b[:10], errTorn, 0},
		{"torn tail", b[:len(b)-3], errTorn, 9},
		{"torn header", b[:end9+5], errTorn, 9},
		{"flipped payload", flip(b, len(b)-1), ErrCorrupt, 9},
		{"flipped length", flip(b, int(end9)+3), ErrCorrupt, 9},
		{"wrong base", segmentBytes(6, 3, pay), ErrCorrupt, 0},
		{"trailing zeros", append(bytes.Clone(b), make([]byte, 100)...), ErrCorrupt, 10},
	} {
		s := &segment{base: 5}
		err := s.scan(bytes.NewReader(tc.data), int64(len(tc.data)), 100)
		if !errors.Is(err, tc.want) || s.count() != tc.keep {
			t.Errorf("%s: %v, kept %d; want %v, %d", tc.name, err, s.count(), tc.want, tc.keep)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x40
	return c
}

func TestSegmentOffsetAndRead(t *testing.T) {
	dir := t.TempDir()
	s, err := createSegment(dir, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.f.Close()
	// Records of varied sizes across several index strides.
	var offs []int64
	for i := range 3000 {
		data := bytes.Repeat([]byte{byte(i)}, i%200)
		b := appendRecord(nil, uint64(i+1), int64(i), data)
		if _, err := s.f.WriteAt(b, s.size); err != nil {
			t.Fatal(err)
		}
		offs = append(offs, s.size)
		s.note(uint64(i+1), s.size, s.size+int64(len(b)), int64(i))
	}
	if len(s.idx) < 5 {
		t.Fatalf("index has %d entries", len(s.idx))
	}
	for i, want := range offs {
		if off, err := s.offsetOf(uint64(i + 1)); err != nil || off != want {
			t.Fatalf("offsetOf(%d) = %d %v, want %d", i+1, off, err, want)
		}
	}
	if off, _ := s.offsetOf(3001); off != s.size {
		t.Fatal("offsetOf(last+1) is not the end")
	}
	// Read everything in batches bounded by count and bytes.
	seq, off := uint64(1), int64(segHeaderSize)
	for off < s.size {
		recs, end, err := s.read(off, s.size, seq, 7, 1000, 1000)
		if err != nil || len(recs) == 0 || len(recs) > 7 {
			t.Fatalf("read at %d: %d records, %v", off, len(recs), err)
		}
		for _, r := range recs {
			i := int(r.Seq - 1)
			if r.Seq != seq || !bytes.Equal(r.Data, bytes.Repeat([]byte{byte(i)}, i%200)) {
				t.Fatalf("record %d wrong", r.Seq)
			}
			seq++
		}
		off = end
	}
	if seq != 3001 {
		t.Fatalf("read %d records", seq-1)
	}
	// A record larger than maxBytes comes alone.
	recs, _, err := s.read(offs[199], s.size, 200, 10, 10, 1000)
	if err != nil || len(recs) != 1 || len(recs[0].Data) != 199 {
		t.Fatalf("large record: %d %v", len(recs), err)
	}
}
