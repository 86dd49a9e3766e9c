package event

import (
	"errors"
	"fmt"
)

// ErrType is returned for an unknown event type name.
var ErrType = errors.New("unknown event type")

// Type is what happened.
type Type uint8

// Event types. The zero Type is invalid.
const (
	// LineCross: the track's anchor crossed a line; Line and Direction are set.
	LineCross Type = iota + 1
	// ZoneEnter: the track entered a zone; Zone is set.
	ZoneEnter
	// ZoneLeave: the track left a zone or ended inside it; Zone and Dwell are set.
	ZoneLeave
	// ZoneLoiter: the track has been in a zone for its loiter threshold; Zone and Dwell are
	// set. Once per visit.
	ZoneLoiter
	// TrackStart: the track was seen for the first time.
	TrackStart
	// TrackEnd: the track ended (not seen for the retention time, or removed by the tracker).
	TrackEnd
)

// Types lists every valid Type.
var Types = []Type{LineCross, ZoneEnter, ZoneLeave, ZoneLoiter, TrackStart, TrackEnd}

var typeNames = [...]string{"", "line.cross", "zone.enter", "zone.leave", "zone.loiter", "track.start", "track.end"}

// String returns the wire name, e.g. "line.cross"; "" for an invalid Type.
func (t Type) String() string {
	if int(t) >= len(typeNames) {
		return ""
	}
	return typeNames[t]
}

// Valid reports whether t is one of Types.
func (t Type) Valid() bool { return t >= LineCross && t <= TrackEnd }

// ParseType returns the Type named s; errors wrap ErrType.
func ParseType(s string) (Type, error) {
	for i := 1; i < len(typeNames); i++ {
		if typeNames[i] == s {
			return Type(i), nil
		}
	}
	return 0, fmt.Errorf("%w %q", ErrType, s)
}

// MarshalText returns the wire name.
func (t Type) MarshalText() ([]byte, error) {
	if !t.Valid() {
		return nil, fmt.Errorf("%w %d", ErrType, t)
	}
	return []byte(t.String()), nil
}

// UnmarshalText parses a wire name.
func (t *Type) UnmarshalText(b []byte) error {
	v, err := ParseType(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// ErrDirection is returned for an unknown direction name.
var ErrDirection = errors.New("unknown direction")

// Direction is the sense of a line crossing relative to the line's orientation p1→p2.
type Direction uint8

// Directions. With image coordinates (x right, y down), In is a move from the left of the
// directed segment p1→p2 to its right; for a line drawn left to right, a move downwards.
const (
	// NoDirection: not a line crossing.
	NoDirection Direction = iota
	// In: from the left side of p1→p2 to the right side.
	In
	// Out: from the right side of p1→p2 to the left side.
	Out
)

var directionNames = [...]string{"", "in", "out"}

// String returns "in", "out", or "" for NoDirection.
func (d Direction) String() string {
	if int(d) >= len(directionNames) {
		return ""
	}
	return directionNames[d]
}

// ParseDirection returns the Direction named s ("in" or "out"); errors wrap ErrDirection.
func ParseDirection(s string) (Direction, error) {
	switch s {
	case "in":
		return In, nil
	case "out":
		return Out, nil
	}
	return NoDirection, fmt.Errorf("%w %q", ErrDirection, s)
}
