package annexb

import (
	"bytes"
	"testing"
)

func TestSplitH264(t *testing.T) {
	sps := []byte{0x67, 0x42}
	pps := []byte{0x68, 0xce}
	idr := []byte{0x65, 0x88, 0x01}  // first_mb 0
	idr2 := []byte{0x65, 0x40, 0x02} // second slice of the same picture
	p := []byte{0x41, 0x9a, 0x03}    // first_mb 0
	var s []byte
	for _, n := range [][]byte{sps, pps, idr, idr2, p, p} {
		s = append(s, 0, 0, 1)
		s = append(s, n...)
	}
	units, key := SplitH264(s)
	if len(units) != 3 {
		t.Fatalf("%d units, want 3", len(units))
	}
	if !key[0] || key[1] || key[2] {
		t.Errorf("key flags %v", key)
	}
	want0 := []byte{0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x68, 0xce, 0, 0, 0, 1, 0x65, 0x88, 0x01, 0, 0, 0, 1, 0x65, 0x40, 0x02}
	if !bytes.Equal(units[0], want0) {
		t.Errorf("unit 0 = %x", units[0])
	}
}

func FuzzSplitH264(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0x65, 0x88, 0, 0, 0, 1, 0x41, 0x9a})
	f.Fuzz(func(t *testing.T, b []byte) { SplitH264(b) })
}
