package onnxedit

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// A message is one protobuf message as its list of fields, in file order. Fields this package
// does not touch keep their encoded bytes, so a rewrite changes only what it edits (unknown
// fields, extensions and field order survive).
type message []field

// field is one field of a message: for wire type bytes val is the payload (without the length),
// otherwise the encoded value (varint, fixed32, fixed64, group body with its end tag).
type field struct {
	num protowire.Number
	typ protowire.Type
	val []byte
}

// errMalformed marks bytes that are not a well-formed protobuf message.
var errMalformed = errors.New("malformed protobuf")

// parse splits b into its fields without copying; the message aliases b.
func parse(b []byte) (message, error) {
	var m message
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, fmt.Errorf("%w: %v", errMalformed, protowire.ParseError(n))
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))
			}
			m = append(m, field{num, typ, v})
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, fmt.Errorf("%w: field %d: %v", errMalformed, num, protowire.ParseError(n))
		}
		m = append(m, field{num, typ, b[:n]})
		b = b[n:]
	}
	return m, nil
}

// size is the encoded size of m.
func (m message) size() int {
	n := 0
	for _, f := range m {
		n += protowire.SizeTag(f.num)
		if f.typ == protowire.BytesType {
			n += protowire.SizeBytes(len(f.val))
		} else {
			n += len(f.val)
		}
	}
	return n
}

// marshal encodes m.
func (m message) marshal() []byte {
	b := make([]byte, 0, m.size())
	for _, f := range m {
		b = protowire.AppendTag(b, f.num, f.typ)
		if f.typ == protowire.BytesType {
			b = protowire.AppendBytes(b, f.val)
		} else {
			b = append(b, f.val...)
		}
	}
	return b
}

// bytesField returns the payload of the last bytes field num (protobuf's last-one-wins rule).
func (m message) bytesField(num protowire.Number) ([]byte, bool) {
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].num == num && m[i].typ == protowire.BytesType {
			return m[i].val, true
		}
	}
	return nil, false
}

// str returns the last string field num, "" when absent.
func (m message) str(num protowire.Number) string {
	b, _ := m.bytesField(num)
	return string(b)
}

// strs returns every string of the repeated field num.
func (m message) strs(num protowire.Number) []string {
	var out []string
	for _, f := range m {
		if f.num == num && f.typ == protowire.BytesType {
			out = append(out, string(f.val))
		}
	}
	return out
}

// varint returns the last varint field num.
func (m message) varint(num protowire.Number) (uint64, bool) {
	for i := len(m) - 1; i >= 0; i-- {
		if m[i].num == num && m[i].typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(m[i].val)
			return v, n > 0
		}
	}
	return 0, false
}

// ints returns the repeated int64 field num, packed or not.
func (m message) ints(num protowire.Number) ([]int64, error) {
	var out []int64
	for _, f := range m {
		if f.num != num {
			continue
		}
		switch f.typ {
		case protowire.VarintType:
			v, _ := protowire.ConsumeVarint(f.val)
			out = append(out, int64(v))
		case protowire.BytesType:
			for b := f.val; len(b) > 0; {
				v, n := protowire.ConsumeVarint(b)
				if n < 0 {
					return nil, fmt.Errorf("%w: packed field %d", errMalformed, num)
				}
				out = append(out, int64(v))
				b = b[n:]
			}
		default:
			return nil, fmt.Errorf("%w: field %d has wire type %d, want varint", errMalformed, num, f.typ)
		}
	}
	return out, nil
}

// messages returns the payloads of the repeated message field num.
func (m message) messages(num protowire.Number) [][]byte {
	var out [][]byte
	for _, f := range m {
		if f.num == num && f.typ == protowire.BytesType {
			out = append(out, f.val)
		}
	}
	return out
}

// without returns m minus every field num (a new slice; m is unchanged).
func (m message) without(num protowire.Number) message {
	out := make(message, 0, len(m))
	for _, f := range m {
		if f.num != num {
			out = append(out, f)
		}
	}
	return out
}

// withBytes returns m with field num set to the single bytes value v, in place of the first
// occurrence (appended when absent).
func (m message) withBytes(num protowire.Number, v []byte) message {
	out := make(message, 0, len(m)+1)
	done := false
	for _, f := range m {
		if f.num != num {
			out = append(out, f)
		} else if !done {
			out = append(out, field{num, protowire.BytesType, v})
			done = true
		}
	}
	if !done {
		out = append(out, field{num, protowire.BytesType, v})
	}
	return out
}

// varintField encodes v as a varint field.
func varintField(num protowire.Number, v uint64) field {
	return field{num, protowire.VarintType, protowire.AppendVarint(nil, v)}
}

// bytesFieldOf encodes v as a bytes field.
func bytesFieldOf(num protowire.Number, v []byte) field {
	return field{num, protowire.BytesType, v}
}

// le64 reads n little-endian int64 values.
func le64(b []byte) []int64 {
	out := make([]int64, len(b)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}
