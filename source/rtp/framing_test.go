package rtp

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

var framingCases = []struct {
	name string
	in   []byte
	want [][]byte
	err  error
}{
	{"two frames", []byte{0, 2, 0xAA, 0xBB, 0, 1, 0xCC}, [][]byte{{0xAA, 0xBB}, {0xCC}}, io.EOF},
	{"keep-alive frames are skipped", []byte{0, 0, 0, 1, 0xCC, 0, 0}, [][]byte{{0xCC}}, io.EOF},
	{"cut in the length", []byte{0, 1, 0xCC, 0}, [][]byte{{0xCC}}, io.ErrUnexpectedEOF},
	{"cut in the packet", []byte{0, 3, 0xCC}, nil, io.ErrUnexpectedEOF},
	{"empty", nil, nil, io.EOF},
}

func TestFrameReader(t *testing.T) {
	for _, tc := range framingCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readFrames(tc.in)
			if !errors.Is(err, tc.err) {
				t.Fatalf("error %v, want %v", err, tc.err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("frames %x, want %x", got, tc.want)
			}
			for i := range got {
				if !bytes.Equal(got[i], tc.want[i]) {
					t.Fatalf("frame %d: %x, want %x", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestAppendFrame(t *testing.T) {
	big := make([]byte, MaxFrame)
	b, err := AppendFrame(nil, big)
	if err != nil || len(b) != MaxFrame+2 || b[0] != 0xFF || b[1] != 0xFF {
		t.Fatalf("max frame: %v %d", err, len(b))
	}
	got, err := readFrames(b)
	if !errors.Is(err, io.EOF) || len(got) != 1 || len(got[0]) != MaxFrame {
		t.Fatalf("read back: %v, %d frames", err, len(got))
	}
	if _, err := AppendFrame(nil, make([]byte, MaxFrame+1)); err == nil {
		t.Fatal("accepted an oversized packet")
	}
}

func readFrames(in []byte) ([][]byte, error) {
	fr := NewFrameReader(bytes.NewReader(in))
	var out [][]byte
	for {
		b, err := fr.Next()
		if err != nil {
			return out, err
		}
		out = append(out, bytes.Clone(b))
	}
}

// FuzzFraming checks that any byte stream either splits into frames that re-encode to a prefix
// of it, or fails cleanly.
func FuzzFraming(f *testing.F) {
	for _, tc := range framingCases {
		f.Add(tc.in)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		frames, err := readFrames(in)
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("unexpected error %v", err)
		}
		var re []byte
		for _, fr := range frames {
			if len(fr) == 0 {
				t.Fatal("empty frame returned")
			}
			re, _ = AppendFrame(re, fr)
		}
		// keep-alive frames (0x0000) are dropped: compare without them
		var stripped []byte
		for rest := in; len(rest) >= 2; {
			n := int(rest[0])<<8 | int(rest[1])
			if 2+n > len(rest) {
				break
			}
			if n > 0 {
				stripped = append(stripped, rest[:2+n]...)
			}
			rest = rest[2+n:]
		}
		if !bytes.Equal(re, stripped) {
			t.Fatalf("re-encoded %x, want %x", re, stripped)
		}
	})
}
