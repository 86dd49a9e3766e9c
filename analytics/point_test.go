package analytics

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestPointStrict(t *testing.T) {
	cases := []struct {
		in   string
		want Point
		err  bool
	}{
		{`[1.5, 2]`, Point{1.5, 2}, false},
		{`[0, 10, 5]`, Point{}, true},
		{`[0]`, Point{}, true},
		{`[null, 1]`, Point{}, true},
		{`"1,2"`, Point{}, true},
	}
	for _, c := range cases {
		var p Point
		err := json.Unmarshal([]byte(c.in), &p)
		if c.err != (err != nil) || (err == nil && p != c.want) || (err != nil && !errors.Is(err, ErrPoint)) {
			t.Errorf("JSON %s: %v %v", c.in, p, err)
		}
		var q Point
		err = yaml.Unmarshal([]byte(c.in), &q)
		if c.err != (err != nil) || (err == nil && q != c.want) {
			t.Errorf("YAML %s: %v %v", c.in, q, err)
		}
	}
}
