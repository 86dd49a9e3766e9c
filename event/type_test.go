package event

import (
	"errors"
	"testing"
)

func TestTypeNames(t *testing.T) {
	for _, ty := range Types {
		b, err := ty.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Type
		if err := back.UnmarshalText(b); err != nil || back != ty {
			t.Fatalf("%s: %v %v", b, back, err)
		}
	}
	if _, err := ParseType("zone.exit"); !errors.Is(err, ErrType) {
		t.Fatal(err)
	}
	if _, err := Type(0).MarshalText(); !errors.Is(err, ErrType) {
		t.Fatal(err)
	}
	if Type(99).String() != "" || Type(0).Valid() {
		t.Fatal("invalid type")
	}
}

func TestDirectionNames(t *testing.T) {
	for _, d := range []Direction{In, Out} {
		back, err := ParseDirection(d.String())
		if err != nil || back != d {
			t.Fatalf("%s: %v", d, err)
		}
	}
	if _, err := ParseDirection("up"); !errors.Is(err, ErrDirection) {
		t.Fatal(err)
	}
}
