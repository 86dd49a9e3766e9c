package detect

import (
	"github.com/vinfer/vinfer/internal/jsonenc"
	"strconv"
)

// Detection is one detected object.
type Detection struct {
	// ClassID is the class index, 0-based, in the order of the labels file.
	ClassID int `json:"class_id"`
	// Label is the class name (Params.Labels[ClassID]).
	Label string `json:"label"`
	// Score is the detection confidence, 0…1 for every supported family.
	Score float32 `json:"score"`
	// Box is [x1,y1,x2,y2] in source-frame pixels (x right, y down, x1 ≤ x2, y1 ≤ y2).
	Box [4]float32 `json:"box"`
	// TrackID identifies the object across the frames of its stream (package track), from 1;
	// 0 when the stream has no tracker or the object is not tracked yet.
	TrackID int64 `json:"track_id,omitempty"`
	// Corners are the object's four corner landmarks in source-frame pixels, clockwise from
	// the top left, for families that give them (plate); all zero otherwise.
	Corners [4][2]float32 `json:"-"`
}

// HasCorners reports whether d carries corner landmarks.
func (d *Detection) HasCorners() bool { return d.Corners != [4][2]float32{} }

// AppendJSON appends d as a JSON object to b and returns it, without allocating once b has room:
// {"class_id":16,"label":"dog","score":0.8551,"box":[132.2,206.1,325.3,543.0]}. The score has 4
// decimals and the box coordinates 1 (a tenth of a pixel); a nonzero TrackID follows the box as
// "track_id":7.
func (d Detection) AppendJSON(b []byte) []byte {
	b = append(b, `{"class_id":`...)
	b = strconv.AppendInt(b, int64(d.ClassID), 10)
	b = append(b, `,"label":`...)
	b = jsonenc.String(b, d.Label)
	b = append(b, `,"score":`...)
	b = jsonenc.Float32(b, d.Score, 4)
	b = append(b, `,"box":[`...)
	for i, v := range d.Box {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.Float32(b, v, 1)
	}
	b = append(b, ']')
	if d.TrackID != 0 {
		b = append(b, `,"track_id":`...)
		b = strconv.AppendInt(b, d.TrackID, 10)
	}
	return append(b, '}')
}

// MarshalJSON encodes d as AppendJSON does.
func (d Detection) MarshalJSON() ([]byte, error) {
	return d.AppendJSON(make([]byte, 0, 96)), nil
}
