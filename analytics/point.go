package analytics

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// ErrPoint is returned when a point is not exactly two finite numbers.
var ErrPoint = errors.New("a point is [x, y]: exactly two finite numbers")

// UnmarshalJSON reads [x, y], refusing more or fewer numbers (encoding/json would drop or
// zero-fill them silently).
func (p *Point) UnmarshalJSON(b []byte) error {
	var v []*float64
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%w: %s", ErrPoint, b)
	}
	return p.set(v)
}

// UnmarshalYAML implements yaml.InterfaceUnmarshaler with the same rule.
func (p *Point) UnmarshalYAML(unmarshal func(any) error) error {
	var v []*float64
	if err := unmarshal(&v); err != nil {
		return ErrPoint
	}
	return p.set(v)
}

func (p *Point) set(v []*float64) error {
	if len(v) != 2 || v[0] == nil || v[1] == nil {
		return ErrPoint
	}
	for _, f := range v {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			return ErrPoint
		}
	}
	*p = Point{*v[0], *v[1]}
	return nil
}
