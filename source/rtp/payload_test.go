package rtp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vinfer/vinfer/media"
)

// unpackCases are payload sequences (nil: a loss report) with the NAL units they must give.
var unpackCases = []struct {
	name      string
	codec     media.Codec
	in        [][]byte
	want      [][]byte
	truncated int
	err       error
}{
	{"h264 single", media.CodecH264, [][]byte{{0x65, 1, 2}}, [][]byte{{0x65, 1, 2}}, 0, nil},
	{"h264 STAP-A", media.CodecH264, [][]byte{{24, 0, 2, 0x67, 1, 0, 2, 0x68, 2}}, [][]byte{{0x67, 1}, {0x68, 2}}, 0, nil},
	{"h264 STAP-A truncated", media.CodecH264, [][]byte{{24, 0, 9, 0x67}}, nil, 0, ErrPayloadTruncated},
	{"h264 FU-A whole", media.CodecH264, [][]byte{{0x7C, 0x85, 1}, {0x7C, 0x05, 2}, {0x7C, 0x45, 3}}, [][]byte{{0x65, 1, 2, 3}}, 0, nil},
	{"h264 FU-A cut at a gap", media.CodecH264, [][]byte{{0x7C, 0x85, 1}, nil, {0x7C, 0x05, 2}, {0x7C, 0x45, 3}}, [][]byte{{0x65, 1}}, 1, nil},
	{"h264 FU-A without start", media.CodecH264, [][]byte{{0x7C, 0x05, 2}}, nil, 0, ErrPayloadTruncated},
	{"h264 FU-A end lost, next NAL", media.CodecH264, [][]byte{{0x7C, 0x85, 1}, {0x41, 9}}, [][]byte{{0x65, 1}, {0x41, 9}}, 1, nil},
	{"h264 FU-B unsupported", media.CodecH264, [][]byte{{29, 0x85, 1}}, nil, 0, ErrPayloadType},
	{"h265 single", media.CodecH265, [][]byte{{0x26, 1, 7}}, [][]byte{{0x26, 1, 7}}, 0, nil},
	{"h265 AP", media.CodecH265, [][]byte{{0x60, 1, 0, 3, 0x40, 1, 5, 0, 3, 0x42, 1, 6}}, [][]byte{{0x40, 1, 5}, {0x42, 1, 6}}, 0, nil},
	{"h265 FU", media.CodecH265, [][]byte{{0x62, 1, 0x93, 1}, {0x62, 1, 0x53, 2}}, [][]byte{{0x26, 1, 1, 2}}, 0, nil},
	{"h265 FU cut at a gap", media.CodecH265, [][]byte{{0x62, 1, 0x93, 1}, nil, {0x62, 1, 0x53, 2}}, [][]byte{{0x26, 1, 1}}, 1, nil},
	{"h265 PACI unsupported", media.CodecH265, [][]byte{{0x64, 1, 0}}, nil, 0, ErrPayloadType},
}

// runUnpack feeds payloads (nil: loss) and returns the NAL units, truncations and first error.
func runUnpack(codec media.Codec, in [][]byte) (out [][]byte, truncated int, first error) {
	u := unpacker{codec: codec}
	for _, p := range in {
		if p == nil {
			u.lost()
			continue
		}
		n, tr, err := u.push(p)
		for _, x := range n {
			out = append(out, bytes.Clone(x))
		}
		truncated += tr
		if first == nil {
			first = err
		}
	}
	n, tr := u.flush()
	for _, x := range n {
		out = append(out, bytes.Clone(x))
	}
	return out, truncated + tr, first
}

func TestUnpack(t *testing.T) {
	for _, tc := range unpackCases {
		t.Run(tc.name, func(t *testing.T) {
			out, tr, err := runUnpack(tc.codec, tc.in)
			if !errors.Is(err, tc.err) || tr != tc.truncated || len(out) != len(tc.want) {
				t.Fatalf("got %x, %d truncated, %v; want %x, %d, %v", out, tr, err, tc.want, tc.truncated, tc.err)
			}
			for i := range out {
				if !bytes.Equal(out[i], tc.want[i]) {
					t.Fatalf("NAL unit %d: %x, want %x", i, out[i], tc.want[i])
				}
			}
		})
	}
}

// FuzzUnpack feeds arbitrary payloads: no panic, and every NAL unit handed out is non-empty.
func FuzzUnpack(f *testing.F) {
	for _, tc := range unpackCases {
		var b []byte
		for _, p := range tc.in {
			b = append(b, byte(len(p)))
			b = append(b, p...)
		}
		f.Add(tc.codec == media.CodecH265, b)
	}
	f.Fuzz(func(t *testing.T, h265 bool, b []byte) {
		codec := media.CodecH264
		if h265 {
			codec = media.CodecH265
		}
		var in [][]byte
		for len(b) > 0 {
			n := min(int(b[0]), len(b)-1)
			var p []byte
			if n > 0 {
				p = b[1 : 1+n]
			}
			in = append(in, p)
			b = b[1+n:]
		}
		out, _, _ := runUnpack(codec, in)
		for _, n := range out {
			if len(n) == 0 {
				t.Fatal("empty NAL unit")
			}
		}
	})
}

func TestLooksLikeOtherCodec(t *testing.T) {
	for _, tc := range []struct {
		codec media.Codec
		p     []byte
		want  bool
	}{
		{media.CodecH264, []byte{0x40, 0x01, 0x0C}, true}, // H.265 VPS
		{media.CodecH264, []byte{0x62, 0x01, 0x93}, true}, // H.265 FU
		{media.CodecH264, []byte{0x67, 0x42, 0x80}, false},
		{media.CodecH265, []byte{0x67, 0x42, 0x80}, true}, // H.264 SPS
		{media.CodecH265, []byte{0x7C, 0x85, 0x00}, true}, // H.264 FU-A
		{media.CodecH265, []byte{0x40, 0x01, 0x0C}, false},
	} {
		if got := looksLikeOtherCodec(tc.codec, tc.p); got != tc.want {
			t.Errorf("%v %x: %v, want %v", tc.codec, tc.p, got, tc.want)
		}
	}
}
