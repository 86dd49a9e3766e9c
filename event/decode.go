package event

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrMissing is returned by UnmarshalJSON when a field the event's type needs is absent.
var ErrMissing = errors.New("missing field")

// wire is the JSON form, with pointers to tell absent fields from zero ones.
type wire struct {
	ID        *ID         `json:"id"`
	Type      *Type       `json:"type"`
	Stream    *string     `json:"stream"`
	Frame     *int64      `json:"frame"`
	PTS       *float64    `json:"pts"`
	Time      *time.Time  `json:"time"`
	TrackID   *int64      `json:"track_id"`
	ClassID   *int        `json:"class_id"`
	Label     *string     `json:"label"`
	Group     string      `json:"group"`
	Score     *float32    `json:"score"`
	Box       *[4]float32 `json:"box"`
	Zone      *string     `json:"zone"`
	Line      *string     `json:"line"`
	Direction *string     `json:"direction"`
	Dwell     *float64    `json:"dwell"`

	HasClip     *bool   `json:"has_clip"`
	HasSnapshot *bool   `json:"has_snapshot"`
	ClipURL     *string `json:"clip_url"`
	SnapshotURL *string `json:"snapshot_url"`

	Attributes map[string]wireAttribute `json:"attributes"`
	Embedding  *Embedding               `json:"embedding"`
}

// UnmarshalJSON decodes what AppendJSON encodes. Every field of the schema that the event's type
// requires must be present (errors wrap ErrMissing, ErrType, ErrDirection or ErrID); unknown
// keys are ignored, so that readers accept later additions.
func (e *Event) UnmarshalJSON(b []byte) error {
	var w wire
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	miss := func(name string) error { return fmt.Errorf("event: %w %q", ErrMissing, name) }
	switch {
	case w.ID == nil:
		return miss("id")
	case w.Type == nil:
		return miss("type")
	case w.Stream == nil:
		return miss("stream")
	case w.Frame == nil:
		return miss("frame")
	case w.PTS == nil:
		return miss("pts")
	case w.Time == nil:
		return miss("time")
	case w.TrackID == nil:
		return miss("track_id")
	case w.ClassID == nil:
		return miss("class_id")
	case w.Label == nil:
		return miss("label")
	case w.Score == nil:
		return miss("score")
	case w.Box == nil:
		return miss("box")
	}
	v := Event{
		ID: *w.ID, Type: *w.Type, Stream: *w.Stream, Frame: *w.Frame, PTS: seconds(*w.PTS),
		Time: *w.Time, TrackID: *w.TrackID, ClassID: *w.ClassID, Label: *w.Label, Group: w.Group,
		Score: *w.Score, Box: *w.Box, Evidence: decodeEvidence(&w),
	}
	switch v.Type {
	case LineCross:
		if w.Line == nil {
			return miss("line")
		}
		if w.Direction == nil {
			return miss("direction")
		}
		d, err := ParseDirection(*w.Direction)
		if err != nil {
			return fmt.Errorf("event: %w", err)
		}
		v.Line, v.Direction = *w.Line, d
	case ZoneEnter, ZoneLeave, ZoneLoiter:
		if w.Zone == nil {
			return miss("zone")
		}
		v.Zone = *w.Zone
		if v.Type != ZoneEnter {
			if w.Dwell == nil {
				return miss("dwell")
			}
			v.Dwell = seconds(*w.Dwell)
		}
	}
	decodeVoted(&v, &w)
	*e = v
	return nil
}

// seconds converts seconds to a Duration, rounded to the nanosecond and saturated.
func seconds(s float64) time.Duration {
	ns := math.Round(s * 1e9)
	switch {
	case ns >= math.MaxInt64:
		return math.MaxInt64
	case ns <= math.MinInt64:
		return math.MinInt64
	case ns != ns:
		return 0
	}
	return time.Duration(ns)
}
