package brokered

import (
	"strconv"
	"time"

	"github.com/vinfer/vinfer/event"
	"github.com/vinfer/vinfer/internal/jsonenc"
)

// counts keeps the zone and line counts of every stream, derived from the events a sink is
// written: per zone and class, objects inside (zone.enter − zone.leave) and the zone.enter,
// zone.leave and zone.loiter totals; per line and class, the in and out crossings. They start
// at 0 with the sink, like the analyzer's own counters. Size: one entry per stream, zone or
// line, and class seen.
type counts struct {
	streams map[string]map[string]*place // stream → zone or line name → counts
	dirty   []*place                     // changed by the events of the current Write
}

// place is one zone's or line's counts in one stream.
type place struct {
	stream, name string
	line         bool
	classes      []classCount // first-seen order
	frame        int64        // of the latest event counted
	time         time.Time
	dirty        bool
}

// classCount is one class's figures: zones objects and enter, leave, loiter; lines in, out.
type classCount struct {
	label   string
	objects int64
	n       [3]uint64
}

// add counts e (events other than zone and line events are ignored) and marks its place
// changed.
func (c *counts) add(stream string, e *event.Event) {
	var name string
	var line bool
	switch e.Type {
	case event.ZoneEnter, event.ZoneLeave, event.ZoneLoiter:
		name = e.Zone
	case event.LineCross:
		name, line = e.Line, true
		if e.Direction != event.In && e.Direction != event.Out {
			return
		}
	default:
		return
	}
	if name == "" || len(name) > 255 {
		return
	}
	p := c.place(stream, name, line)
	k := p.class(e.Label)
	switch e.Type {
	case event.ZoneEnter:
		k.objects++
		k.n[0]++
	case event.ZoneLeave:
		k.objects = max(k.objects-1, 0)
		k.n[1]++
	case event.ZoneLoiter:
		k.n[2]++
	case event.LineCross:
		k.n[e.Direction-event.In]++
	}
	p.frame, p.time = e.Frame, e.Time
	if !p.dirty {
		p.dirty = true
		c.dirty = append(c.dirty, p)
	}
}

// place returns the counts of zone or line name in stream, made when missing or of the other
// kind (a name reused after a scene change).
func (c *counts) place(stream, name string, line bool) *place {
	if c.streams == nil {
		c.streams = map[string]map[string]*place{}
	}
	ps := c.streams[stream]
	if ps == nil {
		ps = map[string]*place{}
		c.streams[stream] = ps
	}
	p := ps[name]
	if p == nil || p.line != line {
		p = &place{stream: stream, name: name, line: line}
		ps[name] = p
	}
	return p
}

func (p *place) class(label string) *classCount {
	for i := range p.classes {
		if p.classes[i].label == label {
			return &p.classes[i]
		}
	}
	p.classes = append(p.classes, classCount{label: label})
	return &p.classes[len(p.classes)-1]
}

// appendJSON appends p's count message:
//
//	zone: {"stream":"cam1","zone":"table","objects":2,"enter":9,"leave":7,"loiter":1,
//	       "classes":{"person":{"objects":2,"enter":9,"leave":7,"loiter":1}},"frame":812,"time":"…"}
//	line: {"stream":"cam1","line":"exit","in":5,"out":3,"classes":{"person":{"in":5,"out":3}},
//	       "frame":812,"time":"…"}
//
// The top-level figures are the sums over the classes; frame and time are those of the latest
// event counted.
func (p *place) appendJSON(b []byte) []byte {
	var sum classCount
	for _, k := range p.classes {
		sum.objects += k.objects
		for i := range k.n {
			sum.n[i] += k.n[i]
		}
	}
	b = append(b, `{"stream":`...)
	b = jsonenc.String(b, p.stream)
	if p.line {
		b = append(b, `,"line":`...)
	} else {
		b = append(b, `,"zone":`...)
	}
	b = jsonenc.String(b, p.name)
	b = p.appendFigures(b, &sum)
	b = append(b, `,"classes":{`...)
	for i := range p.classes {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonenc.String(b, p.classes[i].label)
		b = append(b, ":{"...)
		b = p.appendFigures(b, &p.classes[i])
		b = append(b, '}')
	}
	b = append(b, `},"frame":`...)
	b = strconv.AppendInt(b, p.frame, 10)
	b = append(b, `,"time":"`...)
	b = p.time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	return append(b, `"}`...)
}

// appendFigures appends k's figures as object members, after a comma unless b ends with '{'.
func (p *place) appendFigures(b []byte, k *classCount) []byte {
	sep := func(b []byte, key string) []byte {
		if len(b) > 0 && b[len(b)-1] != '{' {
			b = append(b, ',')
		}
		return append(append(append(b, '"'), key...), `":`...)
	}
	if p.line {
		b = strconv.AppendUint(sep(b, "in"), k.n[0], 10)
		return strconv.AppendUint(sep(b, "out"), k.n[1], 10)
	}
	b = strconv.AppendInt(sep(b, "objects"), k.objects, 10)
	b = strconv.AppendUint(sep(b, "enter"), k.n[0], 10)
	b = strconv.AppendUint(sep(b, "leave"), k.n[1], 10)
	return strconv.AppendUint(sep(b, "loiter"), k.n[2], 10)
}
