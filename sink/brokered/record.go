package brokered

import (
	"errors"

	"github.com/vinfer/vinfer/event"
)

// Kind is what a record carries.
type Kind byte

// Record kinds.
const (
	KindEvent      Kind = 'e'
	KindDetections Kind = 'd'
	// KindCount is a zone's or line's counts (Settings.Counts); its Type is the zone's or
	// line's name.
	KindCount Kind = 'c'
	// KindRetained is a retained message of the sink's own protocol (MQTT discovery: Home
	// Assistant's config and availability topics); its Type is the whole topic and its Body
	// the payload, possibly empty (MQTT: clears the retained message). Only the MQTT sink
	// writes them.
	KindRetained Kind = 'r'
)

// TypeDetections is the type of detection records.
const TypeDetections = "detections"

const recordVersion = 1

// ErrRecord is returned by Decode for a payload that is not a record of this format.
var ErrRecord = errors.New("brokered: malformed record")

// Record is a decoded outbox record. Its fields alias the payload it was decoded from.
type Record struct {
	Kind   Kind
	ID     event.ID
	Stream []byte
	Type   []byte
	// Body is the JSON message.
	Body []byte
}

// AppendRecord appends a record's encoding to b. stream and typ must be 1 to 255 bytes.
func AppendRecord(b []byte, k Kind, id event.ID, stream, typ string) []byte {
	b = append(b, recordVersion, byte(k))
	b = append(b, id[:]...)
	b = append(b, byte(len(stream)))
	b = append(b, stream...)
	b = append(b, byte(len(typ)))
	return append(b, typ...)
}

// Decode decodes a record from p (see the package documentation); the result aliases p.
func Decode(p []byte) (Record, error) {
	var r Record
	if len(p) < 20 || p[0] != recordVersion || !known(Kind(p[1])) {
		return r, ErrRecord
	}
	r.Kind = Kind(p[1])
	copy(r.ID[:], p[2:18])
	p = p[18:]
	n := int(p[0])
	if n == 0 || len(p) < 1+n+1 {
		return r, ErrRecord
	}
	r.Stream, p = p[1:1+n], p[1+n:]
	m := int(p[0])
	if m == 0 || len(p) < 1+m {
		return r, ErrRecord
	}
	r.Type, r.Body = p[1:1+m], p[1+m:]
	return r, nil
}

func known(k Kind) bool {
	return k == KindEvent || k == KindDetections || k == KindCount || k == KindRetained
}
