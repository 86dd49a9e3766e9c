package event

import (
	"github.com/vinfer/vinfer/internal/jsonenc"
	"strconv"
	"time"
)

// Event is one thing that happened to one tracked object. Strings are borrowed from their
// producer (zone, line and label names live as long as its configuration): copy an Event's
// strings or encode it before keeping it beyond the producer's next call.
type Event struct {
	// ID is unique and sorts by time (see Generator).
	ID ID
	// Type is what happened.
	Type Type
	// Stream is the stream id.
	Stream string
	// Frame is the index of the frame where the event was decided (decoded frames, from 0).
	Frame int64
	// PTS is that frame's presentation time since the start of the stream.
	PTS time.Duration
	// Time is the wall-clock time of that frame; encoded in UTC with millisecond precision.
	Time time.Time
	// TrackID is the tracker's id of the object, unique in the stream.
	TrackID int64
	// ClassID is the object's class index, Label its name (may be empty).
	ClassID int
	Label   string
	// Group is the class group Label belongs to (the stream's groups:), "" for none; encoded
	// as "group" after "label" only when set.
	Group string
	// Score is the object's detection confidence, 0…1.
	Score float32
	// Box is the object's [x1,y1,x2,y2] in frame pixels: on the frame where the event was
	// decided, or the last frame it was seen on for a track that ended.
	Box [4]float32
	// Zone is the zone's name (zone.* events), Line the line's name (line.cross).
	Zone, Line string
	// Direction is the crossing's sense (line.cross).
	Direction Direction
	// Dwell is the time spent in the zone (zone.leave, zone.loiter), from PTS.
	Dwell time.Duration
	// Evidence, set by the evidence recorder before the sinks encode the event, adds has_clip,
	// has_snapshot and the clip's and snapshot's URLs; nil (no evidence section): none.
	Evidence *Evidence
	// Attributes are the track's voted attributes (a cascade's as, e.g. plate); nil: none. A
	// pointer keeps Event comparable.
	Attributes *Attributes
	// Embedding is the track's appearance (track.end, opt-in); nil: none.
	Embedding *Embedding
}

// timeLayout is RFC 3339 with exactly three fractional digits.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

// AppendJSON appends e as one JSON object (no newline) to b and returns it, without allocating
// once b has room. Keys come in a fixed order; zone, line, direction and dwell only where the
// type has them, then has_clip, has_snapshot, clip_url and snapshot_url when Evidence is set
// (see the package documentation).
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":"`...)
	b = e.ID.Append(b)
	b = append(b, `","type":"`...)
	b = append(b, e.Type.String()...)
	b = append(b, `","stream":`...)
	b = jsonenc.String(b, e.Stream)
	b = append(b, `,"frame":`...)
	b = strconv.AppendInt(b, e.Frame, 10)
	b = append(b, `,"pts":`...)
	b = appendSeconds(b, e.PTS)
	b = append(b, `,"time":"`...)
	b = e.Time.UTC().AppendFormat(b, timeLayout)
	b = append(b, `","track_id":`...)
	b = strconv.AppendInt(b, e.TrackID, 10)
	b = append(b, `,"class_id":`...)
	b = strconv.AppendInt(b, int64(e.ClassID), 10)
	b = append(b, `,"label":`...)
	b = jsonenc.String(b, e.Label)
	if e.Group != "" {
		b = append(b, `,"group":`...)
		b = jsonenc.String(b, e.Group)
	}
	b = append(b, `,"score":`...)
	b = jsonenc.Float32(b, e.Score, 4)
	b = append(b, `,"box":[`...)
	for i, v := range e.Box {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.Float32(b, v, 1)
	}
	b = append(b, ']')
	switch e.Type {
	case LineCross:
		b = append(b, `,"line":`...)
		b = jsonenc.String(b, e.Line)
		b = append(b, `,"direction":"`...)
		b = append(b, e.Direction.String()...)
		b = append(b, '"')
	case ZoneEnter, ZoneLeave, ZoneLoiter:
		b = append(b, `,"zone":`...)
		b = jsonenc.String(b, e.Zone)
		if e.Type != ZoneEnter {
			b = append(b, `,"dwell":`...)
			b = appendSeconds(b, e.Dwell)
		}
	}
	b = e.appendAttributes(b)
	b = e.appendEmbedding(b)
	b = e.appendEvidence(b)
	return append(b, '}')
}

// MarshalJSON encodes e as AppendJSON does.
func (e Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 320)), nil
}

// appendSeconds writes d in seconds, the shortest decimal that reads back as the same float64:
// the nanoseconds' own decimal (6.56; d.Seconds() adds two float64s, giving 6.5600000000000005).
func appendSeconds(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, float64(d)/1e9, 'f', -1, 64)
}
