package annexb

import (
	"bytes"
	"testing"
)

func annexB(nalus ...[]byte) []byte {
	var s []byte
	for _, n := range nalus {
		s = append(s, 0, 0, 1)
		s = append(s, n...)
	}
	return s
}

var (
	sps  = []byte{0x67, 0x42}
	pps  = []byte{0x68, 0xce}
	aud  = []byte{0x09, 0xf0}
	idr  = []byte{0x65, 0x88, 0x01} // first_mb 0
	idr2 = []byte{0x65, 0x40, 0x02} // second slice of the same picture
	p    = []byte{0x41, 0x9a, 0x03} // first_mb 0
)

var splitCases = []struct {
	name string
	in   []byte
	want [][]byte // access units
	key  []bool
}{
	{
		name: "parameter sets, a two-slice IDR, two P pictures",
		in:   annexB(sps, pps, idr, idr2, p, p),
		want: [][]byte{
			{0, 0, 0, 1, 0x67, 0x42, 0, 0, 0, 1, 0x68, 0xce, 0, 0, 0, 1, 0x65, 0x88, 0x01, 0, 0, 0, 1, 0x65, 0x40, 0x02},
			{0, 0, 0, 1, 0x41, 0x9a, 0x03},
			{0, 0, 0, 1, 0x41, 0x9a, 0x03},
		},
		key: []bool{true, false, false},
	},
	{
		name: "access unit delimiters and 4-byte start codes",
		in:   []byte{0, 0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x65, 0x88, 0x01, 0, 0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x41, 0x9a, 0x03},
		want: [][]byte{
			{0, 0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x65, 0x88, 0x01},
			{0, 0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x41, 0x9a, 0x03},
		},
		key: []bool{true, false},
	},
	{
		name: "bytes before the first start code are dropped, empty NAL units skipped",
		in:   append([]byte{0x41, 0x9a, 0, 0, 1, 0, 0, 1}, annexB(aud, p)...),
		want: [][]byte{{0, 0, 0, 1, 0x09, 0xf0, 0, 0, 0, 1, 0x41, 0x9a, 0x03}},
		key:  []bool{false},
	},
	{name: "empty", in: nil},
	{name: "no start code", in: []byte{0x65, 0x88, 0x01}},
}

func TestSplitH264(t *testing.T) {
	for _, tc := range splitCases {
		t.Run(tc.name, func(t *testing.T) {
			units, key := SplitH264(tc.in)
			if len(units) != len(tc.want) || len(key) != len(tc.want) {
				t.Fatalf("%d units, %d key flags, want %d", len(units), len(key), len(tc.want))
			}
			for i := range units {
				if !bytes.Equal(units[i], tc.want[i]) {
					t.Errorf("unit %d = %x, want %x", i, units[i], tc.want[i])
				}
				if key[i] != tc.key[i] {
					t.Errorf("unit %d: key %v", i, key[i])
				}
			}
		})
	}
}

// within reports whether n is a subslice of b.
func within(b, n []byte) bool {
	if len(n) == 0 {
		return true
	}
	i := cap(b) - cap(n)
	return i >= 0 && i+len(n) <= len(b) && &b[i] == &n[0]
}

// FuzzSplitH264 splits arbitrary bytes: NAL units lie inside the input and hold no start code,
// access units are Annex-B with the right key flag, and splitting their concatenation again
// gives the same access units.
func FuzzSplitH264(f *testing.F) {
	for _, tc := range splitCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		in := nalus(b)
		var nonEmpty [][]byte
		for i, n := range in {
			if !within(b, n) {
				t.Fatalf("NAL unit %d (%x) is not inside the input", i, n)
			}
			if bytes.Contains(n, []byte{0, 0, 1}) {
				t.Fatalf("NAL unit %d (%x) holds a start code", i, n)
			}
			if i < len(in)-1 && len(n) > 0 && n[len(n)-1] == 0 {
				t.Fatalf("NAL unit %d (%x) ends in a zero byte", i, n)
			}
			if len(n) > 0 {
				nonEmpty = append(nonEmpty, n)
			}
		}
		units, key := SplitH264(b)
		if len(units) != len(key) {
			t.Fatalf("%d units, %d key flags", len(units), len(key))
		}
		var all [][]byte
		var joined []byte
		for i, u := range units {
			if !bytes.HasPrefix(u, []byte{0, 0, 0, 1}) {
				t.Fatalf("unit %d (%x) does not start with a start code", i, u)
			}
			idr := false
			for _, n := range nalus(u) {
				idr = idr || n[0]&0x1f == 5
				all = append(all, n)
			}
			if idr != key[i] {
				t.Fatalf("unit %d (%x): key %v", i, u, key[i])
			}
			joined = append(joined, u...)
		}
		if len(all) != len(nonEmpty) {
			t.Fatalf("%d NAL units in the access units, %d in the input", len(all), len(nonEmpty))
		}
		for i := range all {
			if !bytes.Equal(all[i], nonEmpty[i]) {
				t.Fatalf("NAL unit %d: %x in the access units, %x in the input", i, all[i], nonEmpty[i])
			}
		}
		again, key2 := SplitH264(joined)
		if len(again) != len(units) {
			t.Fatalf("%d units after a round trip, want %d", len(again), len(units))
		}
		for i := range again {
			if !bytes.Equal(again[i], units[i]) || key2[i] != key[i] {
				t.Fatalf("unit %d after a round trip: %x, want %x", i, again[i], units[i])
			}
		}
	})
}
