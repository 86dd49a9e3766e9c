package h26x

import (
	"bytes"
	"testing"

	"github.com/vinfer/vinfer/media"
)

func annexB(nalus ...[]byte) []byte {
	var b []byte
	for _, n := range nalus {
		b = append(b, 0, 0, 0, 1)
		b = append(b, n...)
	}
	return b
}

var (
	sps264 = []byte{0x67, 0x42, 0xC0, 0x1F, 0xDA}
	pps264 = []byte{0x68, 0xCE, 0x3C, 0x80}
	aud264 = []byte{0x09, 0xF0}
	sei264 = []byte{0x06, 0x05, 0x01, 0x80}
	idr264 = []byte{0x65, 0x88, 0x84, 0x00, 0x03}
	p264   = []byte{0x41, 0x9A, 0x02}
	vps265 = []byte{0x40, 0x01, 0x0C}
	sps265 = []byte{0x42, 0x01, 0x01}
	pps265 = []byte{0x44, 0x01, 0xC1}
	idr265 = []byte{0x26, 0x01, 0xAF} // IDR_W_RADL (19)
	cra265 = []byte{0x2A, 0x01, 0xAF} // CRA (21)
	trl265 = []byte{0x02, 0x01, 0xD0} // TRAIL_R (1)
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		codec media.Codec
		nalu  []byte
		want  Kind
	}{
		{media.CodecH264, sps264, KindSPS},
		{media.CodecH264, pps264, KindPPS},
		{media.CodecH264, aud264, KindAUD},
		{media.CodecH264, sei264, KindOther},
		{media.CodecH264, idr264, KindKey},
		{media.CodecH264, p264, KindVCL},
		{media.CodecH265, vps265, KindVPS},
		{media.CodecH265, sps265, KindSPS},
		{media.CodecH265, pps265, KindPPS},
		{media.CodecH265, idr265, KindKey},
		{media.CodecH265, cra265, KindKey},
		{media.CodecH265, trl265, KindVCL},
		{media.CodecH265, []byte{0x46, 0x01}, KindAUD},
		{media.CodecH265, []byte{0x4E, 0x01}, KindOther}, // prefix SEI
		{media.CodecH264, nil, KindOther},
		{media.CodecUnknown, idr264, KindOther},
	} {
		if got := Classify(tc.codec, tc.nalu); got != tc.want {
			t.Errorf("Classify(%v, %x) = %d, want %d", tc.codec, tc.nalu, got, tc.want)
		}
	}
}

var nextNALUCases = []struct {
	name string
	in   []byte
	want [][]byte
}{
	{"4-byte start codes", annexB(sps264, pps264, idr264), [][]byte{sps264, pps264, idr264}},
	{"3-byte start codes and trailing zeros", []byte{0, 0, 1, 0x09, 0xF0, 0, 0, 0, 1, 0x41, 0x9A, 0, 0}, [][]byte{aud264, {0x41, 0x9A}}},
	{"leading zero bytes", []byte{0, 0, 0, 0, 0, 1, 0x65, 1, 0, 0, 1, 0x41}, [][]byte{{0x65, 1}, {0x41}}},
	{"no start code", []byte{0x41, 0x9A, 0, 0, 1, 0x65}, [][]byte{{0x41, 0x9A}, {0x65}}},
	{"emulation prevention is kept", annexB([]byte{0x65, 0, 0, 3, 1, 2}), [][]byte{{0x65, 0, 0, 3, 1, 2}}},
	{"empty", nil, nil},
	{"only zeros", []byte{0, 0, 0, 0}, nil},
}

func TestNextNALU(t *testing.T) {
	for _, tc := range nextNALUCases {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]byte
			for b := tc.in; len(b) > 0; {
				var n []byte
				n, b = NextNALU(b)
				if len(n) > 0 {
					got = append(got, n)
				}
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %x, want %x", got, tc.want)
			}
			for i := range got {
				if !bytes.Equal(got[i], tc.want[i]) {
					t.Fatalf("NAL unit %d: %x, want %x", i, got[i], tc.want[i])
				}
			}
		})
	}
}

var builderCases = []struct {
	name      string
	codec     media.Codec
	sdp       [][]byte   // out-of-band parameter sets
	aus       [][][]byte // NAL units added per access unit
	want      [][]byte   // expected Data per access unit (nil: no unit)
	key       []bool
	inserted  []bool
	missingPS []bool
}{
	{
		name:  "in-band parameter sets are kept as they are",
		codec: media.CodecH264,
		aus:   [][][]byte{{aud264, sps264, pps264, sei264, idr264}, {p264}},
		want:  [][]byte{annexB(aud264, sps264, pps264, sei264, idr264), annexB(p264)},
		key:   []bool{true, false}, inserted: []bool{false, false}, missingPS: []bool{false, false},
	},
	{
		name:  "SDP parameter sets go before the first slice of each key frame",
		codec: media.CodecH264, sdp: [][]byte{sps264, pps264},
		aus:  [][][]byte{{aud264, sei264, idr264, idr264}, {p264}, {idr264}},
		want: [][]byte{annexB(aud264, sei264, sps264, pps264, idr264, idr264), annexB(p264), annexB(sps264, pps264, idr264)},
		key:  []bool{true, false, true}, inserted: []bool{true, false, true}, missingPS: []bool{false, false, false},
	},
	{
		name:  "a missing PPS is inserted after the in-band SPS",
		codec: media.CodecH264, sdp: [][]byte{pps264},
		aus:  [][][]byte{{sps264, idr264}},
		want: [][]byte{annexB(sps264, pps264, idr264)},
		key:  []bool{true}, inserted: []bool{true}, missingPS: []bool{false},
	},
	{
		name:  "a missing SPS is inserted before the in-band PPS that refers to it",
		codec: media.CodecH264, sdp: [][]byte{sps264},
		aus:  [][][]byte{{aud264, pps264, sei264, idr264}},
		want: [][]byte{annexB(aud264, sps264, pps264, sei264, idr264)},
		key:  []bool{true}, inserted: []bool{true}, missingPS: []bool{false},
	},
	{
		name:  "H.265: a missing VPS and SPS go before the in-band PPS, in that order",
		codec: media.CodecH265, sdp: [][]byte{vps265, sps265},
		aus:  [][][]byte{{pps265, cra265}},
		want: [][]byte{annexB(vps265, sps265, pps265, cra265)},
		key:  []bool{true}, inserted: []bool{true}, missingPS: []bool{false},
	},
	{
		name:  "parameter sets sent apart are remembered for the next key frame",
		codec: media.CodecH264,
		aus:   [][][]byte{{sps264, pps264}, {idr264}},
		want:  [][]byte{nil, annexB(sps264, pps264, idr264)},
		key:   []bool{false, true}, inserted: []bool{false, true}, missingPS: []bool{false, false},
	},
	{
		name:  "a key frame without any known parameter set is flagged",
		codec: media.CodecH264,
		aus:   [][][]byte{{idr264}},
		want:  [][]byte{annexB(idr264)},
		key:   []bool{true}, inserted: []bool{false}, missingPS: []bool{true},
	},
	{
		name:  "two different SPS in one access unit are both in NALUs",
		codec: media.CodecH264,
		aus:   [][][]byte{{sps264, {0x67, 0x42, 0xC0, 0x1F, 0xDB}, pps264, idr264}},
		want:  [][]byte{annexB(sps264, []byte{0x67, 0x42, 0xC0, 0x1F, 0xDB}, pps264, idr264)},
		key:   []bool{true}, inserted: []bool{false}, missingPS: []bool{false},
	},
	{
		name:  "H.265 VPS/SPS/PPS",
		codec: media.CodecH265, sdp: [][]byte{vps265, sps265, pps265},
		aus:  [][][]byte{{cra265}, {trl265}, {vps265, sps265, pps265, idr265}},
		want: [][]byte{annexB(vps265, sps265, pps265, cra265), annexB(trl265), annexB(vps265, sps265, pps265, idr265)},
		key:  []bool{true, false, true}, inserted: []bool{true, false, false}, missingPS: []bool{false, false, false},
	},
}

func TestBuilder(t *testing.T) {
	for _, tc := range builderCases {
		t.Run(tc.name, func(t *testing.T) {
			b := Builder{Codec: tc.codec}
			for _, ps := range tc.sdp {
				b.SetParamSet(ps)
			}
			for i, au := range tc.aus {
				for _, n := range au {
					b.Add(n)
				}
				u, ok := b.Finish()
				if ok != (tc.want[i] != nil) {
					t.Fatalf("unit %d: ok = %v", i, ok)
				}
				if !ok {
					continue
				}
				if !bytes.Equal(u.Data, tc.want[i]) {
					t.Fatalf("unit %d:\n got %x\nwant %x", i, u.Data, tc.want[i])
				}
				if u.Key != tc.key[i] || u.Inserted != tc.inserted[i] || u.MissingParams != tc.missingPS[i] {
					t.Fatalf("unit %d: key %v inserted %v missing %v", i, u.Key, u.Inserted, u.MissingParams)
				}
				if !bytes.Equal(annexB(u.NALUs...), u.Data) {
					t.Fatalf("unit %d: NALUs %x do not match Data", i, u.NALUs)
				}
			}
		})
	}
}

func BenchmarkBuilder(b *testing.B) {
	bl := Builder{Codec: media.CodecH264}
	bl.SetParamSet(sps264)
	bl.SetParamSet(pps264)
	slice := append([]byte{0x65}, make([]byte, 1400)...)
	for i := range slice[1:] {
		slice[i+1] = byte(i%250 + 2)
	}
	b.ReportAllocs()
	for b.Loop() {
		for range 20 {
			bl.Add(slice)
		}
		if _, ok := bl.Finish(); !ok {
			b.Fatal("no unit")
		}
	}
}

func TestProbe(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want media.Codec
	}{
		{"h264 key frame", annexB(aud264, sps264, pps264, sei264, idr264), media.CodecH264},
		{"h265 key frame", annexB(vps265, sps265, pps265, idr265), media.CodecH265},
		{"h265 CRA", annexB(cra265), media.CodecH265},
		{"h264 P frame only", annexB(p264), media.CodecUnknown},
		{"garbage", []byte{1, 2, 3, 4, 5}, media.CodecUnknown},
	} {
		if got := Probe(tc.in); got != tc.want {
			t.Errorf("%s: Probe = %v, want %v", tc.name, got, tc.want)
		}
	}
}
