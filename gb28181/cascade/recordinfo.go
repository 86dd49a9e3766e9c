package cascade

import (
	"time"

	"github.com/vinfer/vinfer/config"
	"github.com/vinfer/vinfer/gb28181/manscdp"
)

// Span is a stretch of a stream's recorded video (record/ segments), [Start, End).
type Span struct {
	Start, End time.Time
}

// Limits of a RecordInfo response (GB/T 28181-2016 §A.2.6.7).
const (
	// maxRecordItems bounds the spans one response lists (the oldest in the range first).
	maxRecordItems = 256
	// recordPart* are the most items per response MESSAGE (a UDP part within one datagram).
	recordPartUDP = 2
	recordPartTCP = 20
	// spanGap: recordings closer than this make one span (segments follow one another).
	spanGap = 2 * time.Second
)

// spans merges recordings (oldest first) closer than spanGap, clipped to [from, to], at most
// maxRecordItems.
func spans(recs []Span, from, to time.Time) []manscdp.RecordItem {
	var out []manscdp.RecordItem
	for _, r := range recs {
		if r.Start.Before(from) {
			r.Start = from
		}
		if r.End.After(to) {
			r.End = to
		}
		if !r.End.After(r.Start) {
			continue
		}
		if n := len(out); n > 0 && r.Start.Sub(out[n-1].End) < spanGap {
			if r.End.After(out[n-1].End) {
				out[n-1].End = r.End
			}
			continue
		}
		if len(out) == maxRecordItems {
			break
		}
		out = append(out, manscdp.RecordItem{Start: r.Start, End: r.End})
	}
	return out
}

// recordInfo is the RecordInfo response to query m of channel ch, in parts: the recorded
// spans of ch's stream in the query's range (Type time; none for alarm or manual). Errors:
// manscdp.ErrRecordRange.
func (u *Upstream) recordInfo(m *manscdp.Message, ch config.GB28181UpChannel) ([][]byte, error) {
	from, to, err := manscdp.RecordRange(m)
	if err != nil {
		return nil, err
	}
	var items []manscdp.RecordItem
	if t := m.Type; (t == "" || t == "all" || t == manscdp.RecordTypeTime) && u.c.Recordings != nil {
		items = spans(u.c.Recordings(ch.Stream, from, to), from, to)
	}
	per := recordPartUDP
	if u.transport == "TCP" {
		per = recordPartTCP
	}
	if len(items) == 0 {
		return [][]byte{manscdp.RecordInfoResponse(m.SN, ch.ID, ch.Name, 0, nil)}, nil
	}
	var out [][]byte
	for i := 0; i < len(items); i += per {
		out = append(out, manscdp.RecordInfoResponse(m.SN, ch.ID, ch.Name, len(items), items[i:min(i+per, len(items))]))
	}
	return out, nil
}
