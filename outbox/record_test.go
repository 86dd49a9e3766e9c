package outbox

import (
	"bytes"
	"errors"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	for _, data := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte("ab"), 1000)} {
		b := appendRecord(nil, 42, 1234567890, data)
		if int64(len(b)) != encodedSize(len(data)) {
			t.Fatalf("size %d, want %d", len(b), encodedSize(len(data)))
		}
		r, n, err := decodeRecord(b, len(data))
		if err != nil || n != len(b) || r.Seq != 42 || r.Time.UnixNano() != 1234567890 || !bytes.Equal(r.Data, data) {
			t.Fatalf("decode: %+v %d %v", r, n, err)
		}
	}
}

func TestRecordErrors(t *testing.T) {
	b := appendRecord(nil, 1, 0, []byte("hello"))
	for i := 0; i < len(b); i++ {
		if _, _, err := decodeRecord(b[:i], 100); !errors.Is(err, errTorn) {
			t.Fatalf("cut at %d: %v, want torn", i, err)
		}
	}
	for i := 0; i < len(b); i++ {
		c := bytes.Clone(b)
		c[i] ^= 0x10
		if _, _, err := decodeRecord(c, 100); err == nil {
			t.Fatalf("flipped byte %d: no error", i)
		}
	}
	if _, _, err := decodeRecord(b, 4); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("over max length: %v", err)
	}
}
