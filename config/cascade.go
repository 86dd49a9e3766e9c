package config

import (
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Cadence is how often a cascade crops one object: every frame (zero), at most once per period,
// or once per object (Once).
type Cadence struct {
	Period time.Duration
	Once   bool
}

// UnmarshalText parses "once" or a Go duration ("1s", "500ms").
func (c *Cadence) UnmarshalText(b []byte) error {
	if string(b) == "once" {
		*c = Cadence{Once: true}
		return nil
	}
	if len(b) == 0 {
		*c = Cadence{}
		return nil
	}
	d, err := time.ParseDuration(string(b))
	if err != nil || d < 0 {
		return fmt.Errorf("every %q: want a duration (1s, 500ms) or once", b)
	}
	*c = Cadence{Period: d}
	return nil
}

// MarshalText writes "once", the duration, or nothing for every frame.
func (c Cadence) MarshalText() ([]byte, error) {
	switch {
	case c.Once:
		return []byte("once"), nil
	case c.Period > 0:
		return []byte(c.Period.String()), nil
	}
	return nil, nil
}

// ErrCascade is wrapped by a cascade declaration's validation errors.
var ErrCascade = errors.New("invalid cascade")

// Validate checks the cascade's own fields; where prefixes each error.
func (c *Cascade) Validate(where string) error {
	var errs []error
	if c.Padding < 0 || c.Padding > 1 {
		errs = append(errs, fmt.Errorf("%s.padding %v: %w: want 0…1 (a fraction of the box on each side)", where, c.Padding, ErrCascade))
	}
	if c.MinSize < 0 || c.MinSize > 1<<14 {
		errs = append(errs, fmt.Errorf("%s.min_size %d: %w: want 0…16384 pixels", where, c.MinSize, ErrCascade))
	}
	if c.MaxCrops < 0 || c.MaxCrops > 1024 {
		errs = append(errs, fmt.Errorf("%s.max_crops %d: %w: want 0…1024", where, c.MaxCrops, ErrCascade))
	}
	if c.As != "" && (!attrName.MatchString(c.As) || reservedAttr[c.As]) {
		errs = append(errs, fmt.Errorf("%s.as %q: %w: want a name of lower-case letters, digits and _ other than a detection's own keys", where, c.As, ErrCascade))
	}
	return errors.Join(errs...)
}

// attrName is the form of a voted attribute's name, a key of the detection's JSON object.
var attrName = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)

// reservedAttr are the keys a detection's JSON object has already.
var reservedAttr = map[string]bool{"class_id": true, "label": true, "score": true, "box": true, "track_id": true,
	"children": true, "attributes": true}
