package rtp

import (
	"bytes"
	"errors"
	"testing"

	"github.com/vinfer/vinfer/media"
)

var spropCases = []struct {
	name string
	sdp  string
	n    int  // parameter sets found
	bad  bool // entries skipped
}{
	{"sps and pps", "a=fmtp:96 packetization-mode=1; sprop-parameter-sets=Z0KAFpZUBgG9NQYGBkAAAAMAQAAABmE=,aM41IA==\r\n", 2, false},
	{"sps only", "a=fmtp:96 sprop-parameter-sets=Z0KAFpZUBgG9NQYGBkAAAAMAQAAABmE=\r\n", 1, false},
	{"pps first, no padding", "a=fmtp:96 sprop-parameter-sets=aM41IA,Z0KAFpZUBgG9NQYGBkAAAAMAQAAABmE\r\n", 2, false},
	{"not base64", "a=fmtp:96 sprop-parameter-sets=!!!,@@\r\n", 0, true},
	{"a slice is no parameter set", "a=fmtp:96 sprop-parameter-sets=ZQEC,aM41IA==\r\n", 1, true},
	{"other payload type", "a=fmtp:97 sprop-parameter-sets=aM41IA==\r\n", 0, false},
}

func TestSpropParamSets(t *testing.T) {
	for _, tc := range spropCases {
		t.Run(tc.name, func(t *testing.T) {
			sets, err := SpropParamSets([]byte(tc.sdp), 96, media.CodecH264)
			if len(sets) != tc.n || (err != nil) != tc.bad || err != nil && !errors.Is(err, ErrSprop) {
				t.Fatalf("%d sets, %v", len(sets), err)
			}
			if stripped := StripSprop([]byte(tc.sdp)); bytes.Contains(stripped, []byte("sprop")) {
				t.Fatalf("StripSprop left %q", stripped)
			}
		})
	}
}

func FuzzSpropParamSets(f *testing.F) {
	for _, tc := range spropCases {
		f.Add([]byte(tc.sdp))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, c := range []media.Codec{media.CodecH264, media.CodecH265} {
			sets, _ := SpropParamSets(b, 96, c)
			for _, s := range sets {
				if len(s) < 2 {
					t.Fatal("short parameter set")
				}
			}
		}
		StripSprop(b)
	})
}
