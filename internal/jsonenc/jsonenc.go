// Package jsonenc appends JSON values to byte slices without allocating: the encoders of
// results and events use it on their hot paths.
package jsonenc

import (
	"strconv"
	"unicode/utf8"
)

// Float32 appends v with prec decimals; NaN and ±Inf, which JSON cannot hold, become 0.
func Float32(b []byte, v float32, prec int) []byte {
	if v-v != 0 {
		v = 0
	}
	return strconv.AppendFloat(b, float64(v), 'f', prec, 32)
}

// String appends s as a JSON string (RFC 8259 §7): quotes, backslashes and control characters
// escaped, invalid UTF-8 replaced by U+FFFD.
func String(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
