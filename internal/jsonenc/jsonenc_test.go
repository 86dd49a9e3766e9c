package jsonenc

import (
	"encoding/json"
	"math"
	"testing"
)

func TestString(t *testing.T) {
	cases := []struct{ in, want string }{
		{"person", `"person"`},
		{"a\"b\\c", `"a\"b\\c"`},
		{"\x00\n", `"\u0000\u000a"`},
		{"caf\xe9", "\"caf\ufffd\""},
		{"行人", `"行人"`},
	}
	for _, c := range cases {
		got := string(String(nil, c.in))
		if got != c.want {
			t.Errorf("String(%q) = %s, want %s", c.in, got, c.want)
		}
		var back string
		if err := json.Unmarshal([]byte(got), &back); err != nil {
			t.Errorf("%s is not JSON: %v", got, err)
		}
	}
}

func TestFloat32(t *testing.T) {
	if got := string(Float32(nil, float32(math.NaN()), 2)); got != "0.00" {
		t.Error(got)
	}
	if got := string(Float32(nil, 0.85514, 4)); got != "0.8551" {
		t.Error(got)
	}
}

func FuzzString(f *testing.F) {
	f.Add("person")
	f.Add("\x00\xff\"")
	f.Fuzz(func(t *testing.T, s string) {
		var back string
		if err := json.Unmarshal(String(nil, s), &back); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
	})
}
