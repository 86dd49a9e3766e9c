package h26x

import (
	"bytes"
	"testing"

	"github.com/vinfer/vinfer/media"
)

// within reports whether n is a subslice of b.
func within(b, n []byte) bool {
	if len(n) == 0 {
		return true
	}
	i := cap(b) - cap(n)
	return i >= 0 && i+len(n) <= len(b) && &b[i] == &n[0]
}

// FuzzNextNALU splits arbitrary bytes: every call makes progress, NAL units lie inside the input
// before the rest, hold no start code and end in no zero byte, and joining them with start codes
// splits back into the same NAL units.
func FuzzNextNALU(f *testing.F) {
	for _, tc := range nextNALUCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var got [][]byte
		for rest := b; len(rest) > 0; {
			n, r := NextNALU(rest)
			if len(r) >= len(rest) {
				t.Fatalf("no progress on %x", rest)
			}
			if !within(rest, n) || !within(rest, r) || (len(r) > 0 && &rest[len(rest)-len(r)] != &r[0]) {
				t.Fatalf("NAL unit %x or rest %x is not inside %x", n, r, rest)
			}
			if len(n) > 0 && cap(n)-len(n) < cap(r) {
				t.Fatalf("NAL unit %x overlaps the rest %x", n, r)
			}
			if bytes.Contains(n, []byte{0, 0, 1}) || (len(n) > 0 && n[len(n)-1] == 0) {
				t.Fatalf("NAL unit %x holds a start code or ends in zero", n)
			}
			for _, c := range []media.Codec{media.CodecH264, media.CodecH265} {
				if k := Classify(c, n); k > KindVCL {
					t.Fatalf("Classify(%v, %x) = %d", c, n, k)
				}
			}
			if len(n) > 0 {
				got = append(got, n)
			}
			rest = r
		}
		if c := Probe(b); c != media.CodecUnknown && c != media.CodecH264 && c != media.CodecH265 {
			t.Fatalf("Probe = %v", c)
		}
		joined := annexB(got...)
		i := 0
		for rest := joined; len(rest) > 0; {
			var n []byte
			n, rest = NextNALU(rest)
			if len(n) == 0 {
				continue
			}
			if i >= len(got) || !bytes.Equal(n, got[i]) {
				t.Fatalf("NAL unit %d after a round trip: %x, want %x", i, n, got)
			}
			i++
		}
		if i != len(got) {
			t.Fatalf("%d NAL units after a round trip, want %d", i, len(got))
		}
	})
}

// builderInput encodes Builder calls as FuzzBuilder reads them: a codec byte (1: H.265), then
// records: 0 is Finish, h < 0x80 is Add of the next h bytes, h ≥ 0x80 SetParamSet of the next
// h&0x7f bytes.
func builderInput(codec media.Codec, sdp [][]byte, aus [][][]byte) []byte {
	b := []byte{0}
	if codec == media.CodecH265 {
		b[0] = 1
	}
	for _, ps := range sdp {
		b = append(append(b, 0x80|byte(len(ps))), ps...)
	}
	for _, au := range aus {
		for _, n := range au {
			b = append(append(b, byte(len(n))), n...)
		}
		b = append(b, 0)
	}
	return b
}

// FuzzBuilder drives a Builder with arbitrary NAL units: a unit comes out exactly when a slice
// was added, its Data is the added NAL units with the missing parameter sets inserted before
// the first slice of a key picture, its NALUs split Data, its flags agree with the NAL unit
// types, and parameter sets handed out are never rewritten.
func FuzzBuilder(f *testing.F) {
	for _, tc := range builderCases {
		f.Add(builderInput(tc.codec, tc.sdp, tc.aus))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		codec := media.CodecH264
		need := needH264
		if in[0]&1 != 0 {
			codec, need = media.CodecH265, needH265
		}
		b := Builder{Codec: codec}
		var added [][]byte
		type kept struct{ s, copy []byte }
		var sets []kept
		finish := func() {
			var ps [4][]byte // what Finish inserts from
			for _, k := range need {
				ps[k] = b.ParamSet(k)
			}
			u, ok := b.Finish()
			if b.Len() != 0 {
				t.Fatalf("%d bytes left after Finish", b.Len())
			}
			var has [4]bool
			var at [4]int // index of the first of each kind in added
			vcl, key, first := false, false, -1
			for i, n := range added {
				switch k := Classify(codec, n); k {
				case KindVPS, KindSPS, KindPPS:
					if !has[k] {
						has[k], at[k] = true, i
					}
				case KindKey, KindVCL:
					vcl, key = true, key || k == KindKey
					if first < 0 {
						first = i
					}
				}
			}
			defer func() { added = added[:0] }()
			if ok != vcl {
				t.Fatalf("ok %v for %x", ok, added)
			}
			if !ok {
				return
			}
			missing, unknown := false, false
			for _, k := range need {
				if !has[k] {
					missing = true
					unknown = unknown || ps[k] == nil
				}
			}
			if u.Key != key || u.MissingParams != (key && unknown) || u.Inserted != (key && missing && !unknown) {
				t.Fatalf("key %v missing %v inserted %v for %x", u.Key, u.MissingParams, u.Inserted, added)
			}
			want := annexB(added...)
			if u.Inserted { // each missing set before the first present one of a later kind, else the first slice
				want = nil
				from := 0
				for i, k := range need {
					if has[k] {
						continue
					}
					to := first
					for _, l := range need[i+1:] {
						if has[l] && at[l] < to {
							to = at[l]
						}
					}
					to = max(to, from)
					want = append(want, annexB(added[from:to]...)...)
					want = append(want, annexB(ps[k])...)
					from = to
				}
				want = append(want, annexB(added[from:]...)...)
			}
			if !bytes.Equal(u.Data, want) {
				t.Fatalf("Data %x for %x", u.Data, added)
			}
			i := 0
			for rest := u.Data; len(rest) > 0; {
				var n []byte
				n, rest = NextNALU(rest)
				if len(n) == 0 {
					continue
				}
				if i >= len(u.NALUs) || !bytes.Equal(n, u.NALUs[i]) {
					t.Fatalf("NALUs %x do not split Data %x", u.NALUs, u.Data)
				}
				if k := Classify(codec, n); k == KindVPS || k == KindSPS || k == KindPPS {
					sets = append(sets, kept{u.NALUs[i], bytes.Clone(n)})
				}
				i++
			}
			if i != len(u.NALUs) {
				t.Fatalf("NALUs %x do not split Data %x", u.NALUs, u.Data)
			}
		}
		for rest := in[1:]; len(rest) > 0; {
			h := int(rest[0])
			rest = rest[1:]
			if h == 0 {
				finish()
				continue
			}
			n := rest[:min(h&0x7f, len(rest))]
			rest = rest[len(n):]
			if h&0x80 != 0 {
				b.SetParamSet(bytes.Clone(n))
			} else if len(n) > 0 {
				b.Add(bytes.Clone(n))
				added = append(added, n)
			}
		}
		finish()
		for _, s := range sets {
			if !bytes.Equal(s.s, s.copy) {
				t.Fatalf("parameter set %x was rewritten to %x", s.copy, s.s)
			}
		}
	})
}
