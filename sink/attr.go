package sink

import (
	"strconv"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/internal/jsonenc"
)

// Voted is an attribute of a tracked detection voted over its track's reads so far: the text
// (ocr) or label (classify) read most, weighted by confidence.
type Voted struct {
	// Parent is the detection's index in Detections.
	Parent int
	// Name is the attribute's name (the cascade's as, e.g. "plate").
	Name string
	// Text is the winning read.
	Text string
	// Score is the winner's share of the track's reads, each weighted by its confidence
	// (0…1).
	Score float32
	// Reads counts the track's reads so far.
	Reads int
}

// AddAttr appends an empty attribute of detection parent and returns it for filling; its Vector
// keeps the memory of the Result's earlier use.
func (r *Result) AddAttr(parent int) *attr.Value {
	if len(r.Attrs) < cap(r.Attrs) {
		r.Attrs = r.Attrs[:len(r.Attrs)+1]
	} else {
		r.Attrs = append(r.Attrs, attr.Value{})
	}
	v := &r.Attrs[len(r.Attrs)-1]
	v.Reset()
	r.AttrParent = append(r.AttrParent, parent)
	return v
}

// DropAttr removes the attribute AddAttr returned last (one that did not decode).
func (r *Result) DropAttr() {
	r.Attrs, r.AttrParent = r.Attrs[:len(r.Attrs)-1], r.AttrParent[:len(r.AttrParent)-1]
}

// appendAttrs appends detection i's attributes to its JSON object:
//
//	,"attributes":[{"model":"ocr","kind":"ocr","text":"B6H920","score":0.83}],
//	"plate":{"text":"B6H920","score":0.91,"reads":7}
//
// Embeddings are left out of results (too large for every frame; see track.end).
func (r *Result) appendAttrs(b []byte, i int) []byte {
	first := true
	for k, p := range r.AttrParent {
		v := &r.Attrs[k]
		if p != i || v.Kind == attr.KindEmbedding {
			continue
		}
		if first {
			b = append(b, `,"attributes":[`...)
			first = false
		} else {
			b = append(b, ',')
		}
		b = append(b, `{"model":`...)
		b = jsonenc.String(b, v.Model)
		b = append(b, `,"kind":`...)
		b = jsonenc.String(b, string(v.Kind))
		switch v.Kind {
		case attr.KindOCR:
			b = append(b, `,"text":`...)
			b = jsonenc.String(b, v.Text)
		case attr.KindClassify:
			b = append(b, `,"label":`...)
			b = jsonenc.String(b, v.Label)
		}
		b = append(b, `,"score":`...)
		b = strconv.AppendFloat(b, float64(v.Score), 'f', 4, 32)
		b = append(b, '}')
	}
	if !first {
		b = append(b, ']')
	}
	for k := range r.Voted {
		v := &r.Voted[k]
		if v.Parent != i {
			continue
		}
		b = append(b, ',')
		b = jsonenc.String(b, v.Name)
		b = append(b, `:{"text":`...)
		b = jsonenc.String(b, v.Text)
		b = append(b, `,"score":`...)
		b = strconv.AppendFloat(b, float64(v.Score), 'f', 4, 32)
		b = append(b, `,"reads":`...)
		b = strconv.AppendInt(b, int64(v.Reads), 10)
		b = append(b, '}')
	}
	return b
}
