package enum

import (
	"errors"
	"testing"
)

type color uint8

var colorNames = []string{"", "red", "green"}

func TestParse(t *testing.T) {
	cases := []struct {
		in   string
		want color
		err  bool
	}{
		{"red", 1, false},
		{" GREEN ", 2, false},
		{"", 0, false},
		{"blue", 0, true},
	}
	for _, c := range cases {
		got, err := Parse[color]("color", colorNames, []byte(c.in))
		if (err != nil) != c.err || got != c.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, error %v", c.in, got, err, c.want, c.err)
		}
		if err != nil && (!errors.Is(err, ErrUnknown) || err.Error() != `color "blue": unknown value (use red or green)`) {
			t.Errorf("error %q", err)
		}
	}
}

func TestNameText(t *testing.T) {
	if Name(color(2), colorNames) != "green" || Name(color(9), colorNames) != "invalid(9)" {
		t.Error("Name")
	}
	if b, err := Text("color", color(1), colorNames); err != nil || string(b) != "red" {
		t.Error("Text", b, err)
	}
	if _, err := Text("color", color(3), colorNames); !errors.Is(err, ErrUnknown) {
		t.Error("Text out of range", err)
	}
	if List([]string{"a"}) != "a" || List([]string{"a", "b", "c"}) != "a, b or c" {
		t.Error("List")
	}
}
