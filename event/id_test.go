package event

import (
	"bytes"
	"errors"
	"sort"
	"testing"
	"time"
)

func TestIDSpecVector(t *testing.T) {
	// The ULID specification's example: 01ARYZ6S41 is 1469918176385 ms (ulid/javascript decodeTime).
	id, err := ParseID("01ARYZ6S41TSV4RRFFQ69G5FAV")
	if err != nil {
		t.Fatal(err)
	}
	if ms := id.Time().UnixMilli(); ms != 1469918176385 {
		t.Fatalf("time %d", ms)
	}
	if s := id.String(); s != "01ARYZ6S41TSV4RRFFQ69G5FAV" {
		t.Fatalf("string %s", s)
	}
	low, err := ParseID("01aryz6s41tsv4rrffq69g5fav")
	if err != nil || low != id {
		t.Fatalf("lower case: %v %v", low, err)
	}
}

func TestIDExtremes(t *testing.T) {
	var max ID
	for i := range max {
		max[i] = 0xff
	}
	cases := []struct {
		id   ID
		text string
	}{
		{ID{}, "00000000000000000000000000"},
		{max, "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"},
		{ID{15: 1}, "00000000000000000000000001"},
		{ID{0: 0x80}, "40000000000000000000000000"},
	}
	for _, c := range cases {
		if s := c.id.String(); s != c.text {
			t.Errorf("%x: %s, want %s", c.id, s, c.text)
		}
		back, err := ParseID(c.text)
		if err != nil || back != c.id {
			t.Errorf("%s: %x %v", c.text, back, err)
		}
	}
}

func TestParseIDErrors(t *testing.T) {
	for _, s := range []string{"", "01ARZ3NDEK", "01ARZ3NDEKTSV4RRFFQ69G5FAVX", "81ARZ3NDEKTSV4RRFFQ69G5FAV", "01ARZ3NDEKTSV4RRFFQ69G5FAU", "01ARZ3NDEKTSV4RRFFQ69G5FA!"} {
		if _, err := ParseID(s); !errors.Is(err, ErrID) {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func TestGeneratorMonotonic(t *testing.T) {
	g := NewGenerator([32]byte{1})
	base := time.UnixMilli(1_700_000_000_000)
	// Same millisecond many times, a step back, then forward.
	times := []time.Duration{0, 0, 0, 300 * time.Microsecond, 0, -5 * time.Millisecond, time.Millisecond, time.Millisecond, 2 * time.Second}
	var ids []ID
	var texts []string
	for _, d := range times {
		id := g.New(base.Add(d))
		ids = append(ids, id)
		texts = append(texts, id.String())
	}
	for i := 1; i < len(ids); i++ {
		if bytes.Compare(ids[i-1][:], ids[i][:]) >= 0 {
			t.Fatalf("id %d %s not after %s", i, texts[i], texts[i-1])
		}
	}
	if !sort.StringsAreSorted(texts) {
		t.Fatal("texts not sorted")
	}
	if got := ids[0].Time(); !got.Equal(base) {
		t.Fatalf("time %v", got)
	}
	if got := ids[5].Time(); !got.Equal(base) { // stepped back: keeps the last millisecond
		t.Fatalf("stepped-back time %v", got)
	}
	if got := ids[8].Time(); !got.Equal(base.Add(2 * time.Second)) {
		t.Fatalf("later time %v", got)
	}
	// Determinism.
	h := NewGenerator([32]byte{1})
	if h.New(base) != ids[0] {
		t.Fatal("same seed, different id")
	}
}

func TestGeneratorOverflow(t *testing.T) {
	g := NewGenerator([32]byte{})
	base := time.UnixMilli(1000)
	g.New(base)
	g.hi, g.lo = 0xffff, ^uint64(0) // force the 80-bit overflow
	id := g.New(base)
	if ms := id.Time().UnixMilli(); ms != 1001 {
		t.Fatalf("after overflow: %d ms", ms)
	}
}

func TestIDAllocs(t *testing.T) {
	g := NewGenerator([32]byte{})
	b := make([]byte, 0, 64)
	now := time.UnixMilli(1_700_000_000_000)
	if n := testing.AllocsPerRun(100, func() { b = g.New(now).Append(b[:0]) }); n != 0 {
		t.Fatalf("%v allocs", n)
	}
}
