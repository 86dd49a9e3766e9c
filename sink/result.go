// Package sink delivers inference results: the Result type every output shares, and outputs
// (JSON Lines here; HTTP/SSE/WebSocket in package api).
package sink

import (
	"github.com/vinfer/vinfer/internal/jsonenc"
	"strconv"
	"time"

	"github.com/vinfer/vinfer/attr"
	"github.com/vinfer/vinfer/detect"
	"github.com/vinfer/vinfer/event"
)

// Result is the outcome of one inferred frame. A Result is borrowed: a Sink must not keep it
// (or its Detections) after Write returns; copy or encode what it needs.
type Result struct {
	// Stream is the stream id (for `vinfer detect`, the input path).
	Stream string
	// Frame is the frame's index in the stream (decoded frames in presentation order, from 0).
	Frame int64
	// PTS is the presentation time since the start of the stream.
	PTS time.Duration
	// Wallclock is the capture time when the source knows it, else zero.
	Wallclock time.Time
	// Width and Height of the decoded frame in pixels; boxes are in this space.
	Width, Height int
	// Model is the name of the model that produced Detections.
	Model      string
	Detections []detect.Detection
	// Secondary are cascade models' detections on crops of Detections, in frame pixels;
	// SecondaryParent[i] is the index in Detections of Secondary[i]'s parent and
	// SecondaryModel[i] the model that found it. Flat, so results are reused without allocating.
	Secondary       []detect.Detection
	SecondaryParent []int
	SecondaryModel  []string
	// Attrs are cascade models' attributes of Detections (ocr reads, embeddings, classes;
	// package attr), AttrParent[i] the index in Detections of Attrs[i]'s detection; Voted are
	// the attributes voted over each tracked detection's reads so far (the plate of a vehicle).
	Attrs      []attr.Value
	AttrParent []int
	Voted      []Voted
	// Latency is the time from the frame leaving the decoder to the result being ready.
	Latency time.Duration
	// QueueWait is the part of Latency the preprocessed frame waited for its batch.
	QueueWait time.Duration
	// Decode, Preprocess, Inference and Postprocess are the time spent on this frame in each
	// stage: the decoder's work up to emitting it, its preprocessing, its batch's inference run
	// (shared by every frame of the batch) and its output decoding with NMS.
	Decode, Preprocess, Inference, Postprocess time.Duration
	// Batch is the number of frames in this frame's inference run.
	Batch int
	// Events are the scene events (line crossings, zone entries, ...) decided on this frame
	// from its tracked detections (package analytics); empty without zones, lines or track
	// events. Borrowed like the rest of the Result.
	Events []event.Event
	// End marks a stream's closing result: no frame of its own (Frame, PTS and the size are the
	// last frame's, already written), only the events of tracks ending with the stream. JSON:
	// {"source","end":true,"model","events"}.
	End bool
}

// AttachSecondary records parent and model for the Secondary entries appended since the last
// call.
func (r *Result) AttachSecondary(parent int, model string) {
	for len(r.SecondaryParent) < len(r.Secondary) {
		r.SecondaryParent = append(r.SecondaryParent, parent)
		r.SecondaryModel = append(r.SecondaryModel, model)
	}
}

// ResetSecondary empties the cascade results (keeping capacity).
func (r *Result) ResetSecondary() {
	r.Secondary, r.SecondaryParent, r.SecondaryModel = r.Secondary[:0], r.SecondaryParent[:0], r.SecondaryModel[:0]
	r.Attrs, r.AttrParent, r.Voted = r.Attrs[:0], r.AttrParent[:0], r.Voted[:0]
}

// Sink consumes results. Write is called from one goroutine per pipeline, in per-stream order.
type Sink interface {
	Write(r *Result) error
}

// AppendJSON appends r as one JSON object (no newline) to b:
//
//	{"source":"cam1","frame":0,"pts":0.0,"width":768,"height":432,"model":"yolox",
//	 "detections":[{"class_id":0,"label":"person","score":0.88,"box":[x1,y1,x2,y2],"track_id":3}],
//	 "events":[{"id":"01J…","type":"line.cross",…}]}
//
// track_id appears on tracked detections, events (docs/events.schema.json) when the frame has
// some.
//
// with pts in seconds and boxes in frame pixels (2 decimals). It allocates nothing when b has room.
func AppendJSON(b []byte, r *Result) []byte {
	b = append(b, `{"source":`...)
	b = jsonenc.String(b, r.Stream)
	if r.End {
		b = append(b, `,"end":true`...)
		if r.Model != "" {
			b = append(b, `,"model":`...)
			b = jsonenc.String(b, r.Model)
		}
		return appendEvents(b, r.Events)
	}
	b = append(b, `,"frame":`...)
	b = strconv.AppendInt(b, r.Frame, 10)
	b = append(b, `,"pts":`...)
	b = strconv.AppendFloat(b, float64(r.PTS)/1e9, 'f', -1, 64) // 6.56, not Seconds()' 6.5600000000000005
	if !r.Wallclock.IsZero() {
		b = append(b, `,"wallclock":"`...)
		b = r.Wallclock.UTC().AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	b = append(b, `,"width":`...)
	b = strconv.AppendInt(b, int64(r.Width), 10)
	b = append(b, `,"height":`...)
	b = strconv.AppendInt(b, int64(r.Height), 10)
	if r.Model != "" {
		b = append(b, `,"model":`...)
		b = jsonenc.String(b, r.Model)
	}
	b = append(b, `,"detections":[`...)
	for i := range r.Detections {
		d := &r.Detections[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"class_id":`...)
		b = strconv.AppendInt(b, int64(d.ClassID), 10)
		b = append(b, `,"label":`...)
		b = jsonenc.String(b, d.Label)
		b = append(b, `,"score":`...)
		b = strconv.AppendFloat(b, float64(d.Score), 'f', 4, 32)
		b = appendBox(b, d.Box)
		if d.TrackID > 0 {
			b = append(b, `,"track_id":`...)
			b = strconv.AppendInt(b, d.TrackID, 10)
		}
		first := true
		for k, p := range r.SecondaryParent {
			if p != i {
				continue
			}
			if first {
				b = append(b, `,"children":[`...)
				first = false
			} else {
				b = append(b, ',')
			}
			c := &r.Secondary[k]
			b = append(b, `{"model":`...)
			b = jsonenc.String(b, r.SecondaryModel[k])
			b = append(b, `,"class_id":`...)
			b = strconv.AppendInt(b, int64(c.ClassID), 10)
			b = append(b, `,"label":`...)
			b = jsonenc.String(b, c.Label)
			b = append(b, `,"score":`...)
			b = strconv.AppendFloat(b, float64(c.Score), 'f', 4, 32)
			b = appendBox(b, c.Box)
			b = append(b, '}')
		}
		if !first {
			b = append(b, ']')
		}
		b = r.appendAttrs(b, i)
		b = append(b, '}')
	}
	b = append(b, ']')
	return appendEvents(b, r.Events)
}

// appendEvents appends `,"events":[…]` when there are events, and the closing brace.
func appendEvents(b []byte, evs []event.Event) []byte {
	if len(evs) > 0 {
		b = append(b, `,"events":[`...)
		for i := range evs {
			if i > 0 {
				b = append(b, ',')
			}
			b = evs[i].AppendJSON(b)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendBox(b []byte, box [4]float32) []byte {
	b = append(b, `,"box":[`...)
	for k, v := range box {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(v), 'f', 1, 32)
	}
	return append(b, ']')
}
