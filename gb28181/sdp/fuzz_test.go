package sdp

import (
	"errors"
	"testing"
)

// FuzzParseAnswer: any input parses or fails with a sentinel; a parsed answer has a valid
// address and port.
func FuzzParseAnswer(f *testing.F) {
	for _, c := range cases {
		if len(c.body) < 4096 {
			f.Add([]byte(c.body))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseAnswer(b)
		if err != nil {
			for _, s := range []error{ErrAnswerSize, ErrSyntax, ErrNoVideo, ErrAddress} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error without a sentinel: %v", err)
		}
		if !a.IP.IsValid() || a.Port < 0 || a.Port > 65535 || len(a.PayloadTypes) > 32 {
			t.Fatalf("%+v", a)
		}
	})
}
