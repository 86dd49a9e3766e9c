package manscdp

import (
	"errors"
	"testing"
)

// FuzzDecode: any input decodes or fails with one of the sentinels, within the limits.
func FuzzDecode(f *testing.F) {
	for _, c := range cases {
		if len(c.body) < 8192 {
			f.Add(c.body)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err != nil {
			for _, s := range []error{ErrTooLarge, ErrEntity, ErrSyntax, ErrRoot, ErrNoCmd, ErrCharset} {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error without a sentinel: %v", err)
		}
		if m.CmdType == "" || len(m.DeviceList.Items) > MaxItems {
			t.Fatalf("decoded %+v", m)
		}
	})
}
