package event

import (
	"maps"
	"slices"
	"strconv"

	"github.com/vinfer/vinfer/internal/jsonenc"
)

// Attribute is a value voted over the object's track from a cascade's reads (e.g. its licence
// plate), encoded as "attributes":{"plate":{"text":"B6H920","score":0.91,"reads":7}}.
type Attribute struct {
	Name, Text string
	// Score is the winning read's share of the track's confidence-weighted reads, 0…1.
	Score float32
	// Reads counts the track's reads.
	Reads int
}

// Attributes are an event's voted attributes, in name order.
type Attributes []Attribute

// appendAttributes appends `,"attributes":{…}` when e has some.
func (e *Event) appendAttributes(b []byte) []byte {
	if e.Attributes == nil || len(*e.Attributes) == 0 {
		return b
	}
	b = append(b, `,"attributes":{`...)
	for i, a := range *e.Attributes {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.String(b, a.Name)
		b = append(b, `:{"text":`...)
		b = jsonenc.String(b, a.Text)
		b = append(b, `,"score":`...)
		b = jsonenc.Float32(b, a.Score, 4)
		b = append(b, `,"reads":`...)
		b = strconv.AppendInt(b, int64(a.Reads), 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// wireAttribute is an attribute's JSON form.
type wireAttribute struct {
	Text  string  `json:"text"`
	Score float32 `json:"score"`
	Reads int     `json:"reads"`
}

// decodeVoted sets v's attributes and embedding from their JSON form.
func decodeVoted(v *Event, w *wire) {
	v.Embedding = w.Embedding
	if len(w.Attributes) == 0 {
		return
	}
	as := make(Attributes, 0, len(w.Attributes))
	for _, name := range slices.Sorted(maps.Keys(w.Attributes)) {
		a := w.Attributes[name]
		as = append(as, Attribute{Name: name, Text: a.Text, Score: a.Score, Reads: a.Reads})
	}
	v.Attributes = &as
}
